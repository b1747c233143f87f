"""The JSON HTTP API at /api/v1/ (django-ninja): its operations are in `routes`, the event stream
in `stream`, tokens in `tokens`; the token page for users is `pages`."""
