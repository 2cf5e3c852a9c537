"""HTTP routers: each only parses the request, calls the service and shapes the response."""
