"""The built-in DNS server the CoreDNS image runs as (`pykubeadm component coredns -conf FILE`).

    cli        CoreDNS's flags → DnsServer
    corefile   the Corefile parser (Caddyfile syntax, CoreDNS's error texts)
    setup      directives → plugins, chained in CoreDNS's plugin order
    plugin     Plugin, Request, SetupContext, PluginError
    server     UDP/TCP listeners, zone routing, start-up lines, reload, lameduck stop
    httpserve  the health/ready/metrics HTTP listeners
    metrics    CoreDNS's Prometheus metrics (prometheus_client)
    plugins/   errors, log, health, ready, prometheus, loadbalance, cache, kubernetes/, loop, forward, reload

DNS messages are built and parsed with dnspython only. Submodules are imported on use; nothing is re-exported.
"""

import dns._features

# The forward plugin speaks DNS over UDP and TCP only, as CoreDNS's does without tls://: dnspython need not import its
# DNS-over-HTTPS and DNS-over-QUIC clients (httpcore, h2, anyio: ~50 ms of CPU at every start of a DNS Pod).
for _feature in ("doh", "doq"):
    dns._features.force(_feature, False)
