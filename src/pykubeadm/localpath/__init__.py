"""The local-path provisioner (Rancher's `rancher.io/local-path`, as kind and k3s ship it): config.py, the
provisioner controller (provisioner.py), its program (cli.py) and the addon objects the lab applies (addon.py)."""
