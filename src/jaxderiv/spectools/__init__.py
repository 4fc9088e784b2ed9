"""Tools that compare and measure spec files."""
