"""Provider tests: each wire format against the fake model server, vendors, the embedded model."""
