"""The certificate controllers (kube's pkg/controller/certificates): approver/ (csrapproving), signer/ (csrsigning,
with its CA in authority.py), cleaner/ (csrcleaner), rootcacertpublisher/, our csrservingapproving/, and the CSR
helpers they share (csrutil.py)."""
