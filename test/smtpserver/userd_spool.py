"""An aiosmtpd handler that keeps each message for the Go tests to read.

Run by test/smtpserver as
    python3 -m aiosmtpd -n -l 127.0.0.1:PORT -c userd_spool.Spool DIR
it writes, for the n-th message, DIR/<n>.json (the envelope) and then
DIR/<n>.eml (the bytes of DATA as the client sent them, dot-unstuffed),
each under a temporary name first, so that a reader never sees half a file.
"""

import itertools
import json
import os


class Spool:
    def __init__(self, directory):
        self.directory = directory
        self.counter = itertools.count(1)

    @classmethod
    def from_cli(cls, parser, *args):
        if len(args) != 1:
            parser.error("Spool takes one argument: the directory")
        return cls(args[0])

    async def handle_DATA(self, server, session, envelope):
        base = os.path.join(self.directory, "%08d" % next(self.counter))
        envelope_json = {"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos}
        with open(base + ".json.tmp", "w") as f:
            json.dump(envelope_json, f)
        os.rename(base + ".json.tmp", base + ".json")
        with open(base + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content)
        os.rename(base + ".eml.tmp", base + ".eml")
        return "250 Message accepted for delivery"
