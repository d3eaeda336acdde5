"""The cost model: roofline per op, alpha + S/B per message, phases and metrics."""
