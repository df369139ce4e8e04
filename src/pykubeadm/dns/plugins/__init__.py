"""The plugins of the built-in DNS server, one module each; `dns.setup.PLUGINS` lists them in CoreDNS's order."""
