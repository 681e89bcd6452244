"""Layer 9, the command line (thin): parse (main.py), call, print; commands that change things
(commands.py) apart from those that only read (commands_view.py)."""
