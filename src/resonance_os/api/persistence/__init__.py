"""What the service stores per tenant: the database, tenants and their API keys, storage quotas,
feedback and reward models."""
