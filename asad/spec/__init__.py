"""Layer 3, the workflow file: workflow.yaml read, validated and checked against a site (load.py is the entry)."""
