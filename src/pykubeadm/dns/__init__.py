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
