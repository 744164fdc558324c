"""Model provider adapters. Each speaks one provider's real wire format over httpx."""
