"""Research analyses of the project's own measurements; not part of the installed package.

Run from the repository root (scripts and tests put it on the path). See research/README.md.
"""
