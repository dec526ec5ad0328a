"""Haboob: the SEDA web server (thesis 6.1), on the seda runtime's public API."""
