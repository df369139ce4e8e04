"""Auditing (--audit-policy-file, --audit-log-*): the audit.k8s.io/v1 Policy, the Event builder and the log backend.
The middleware that emits the events is apiserver/middleware/audit.py."""
