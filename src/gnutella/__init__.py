"""The Gnutella packet router (thesis 6.2): a SEDA service routing Gnutella 0.6 traffic."""
