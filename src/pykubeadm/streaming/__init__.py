"""kubectl's streaming protocols, shared by the kubelet (which serves exec/attach/port-forward) and the API server
(which translates WebSocket to SPDY on the way to the kubelet, as kube-apiserver does).

`spdy` is SPDY/3.1's framing and `session` a SPDY session (either side); `remotecommand` holds what an exec/attach
session is independent of the wire (its options, the client's streams, the Status that ends it); `wsserve` serves
such a session over WebSocket channels (v5/v4.channel.k8s.io) and `spdyclient` runs one against a SPDY server
(stream protocol v4.channel.k8s.io). Nothing here runs a command or knows a Pod.
"""
