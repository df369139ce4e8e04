"""The errors plugin: a plugin that fails turns into SERVFAIL and one `[ERROR] plugin/errors: 2 NAME TYPE: err` line.

`errors { stacktrace }` adds the traceback. Set up by `dns.setup` from the Corefile's `errors` directive.
"""

from __future__ import annotations

import logging

import dns.message
import dns.rcode
import dns.rdatatype

from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext, make_reply

__all__ = ["ErrorsPlugin", "setup"]

log = logging.getLogger("plugin/errors")


class ErrorsPlugin(Plugin):
    name = "errors"

    def __init__(self, stacktrace: bool = False):
        self.stacktrace = stacktrace

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        try:
            return await next_(req)
        except Exception as err:
            log.error(
                "%d %s %s: %s",
                dns.rcode.SERVFAIL,
                req.qname,
                dns.rdatatype.RdataType.to_text(req.qtype),
                err,
                exc_info=self.stacktrace,
            )
            req.extra["writer"] = "errors"
            return make_reply(req, dns.rcode.SERVFAIL)


def setup(d: Directive, ctx: SetupContext) -> ErrorsPlugin:
    if d.args:
        raise PluginError("errors", d.arg_error())
    stacktrace = False
    for p in d.block:
        if p.name == "stacktrace":
            stacktrace = True
        else:
            raise PluginError("errors", p.unknown_property())
    return ErrorsPlugin(stacktrace)
