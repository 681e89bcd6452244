"""Layer 7, what `asad status`, `show`, `history` and `explain` print or draw; reads the store's objects only."""
