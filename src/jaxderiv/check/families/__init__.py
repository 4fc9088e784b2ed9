"""Sample inputs and domains per op family, one module each (imported by check.samples)."""
