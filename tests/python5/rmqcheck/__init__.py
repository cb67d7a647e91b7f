"""The scenarios of grpc_check.py, one module each, and what they share."""
