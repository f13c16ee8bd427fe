#!/usr/bin/env python3
"""An external worker for toolsmith's webhook tools, in the Python standard library only.

A webhook tool configured `"async": true, "execution": "external-dispatch"` POSTs each call
here as `{resultId, toolName, toolCallId, input, completeUrl, token}`. The worker answers at
once (202) and does the work on a thread of its own; then it settles the call by POSTing
`{"status": "completed", "response": ...}` (or `{"status": "failed", "error": ...}`) to
`completeUrl` with `Authorization: Bearer <token>`. The token authorises exactly that
completion: the worker never needs the account's secret.

    python3 examples/worker.py [PORT]     # prints "listening on PORT", serves until killed

The work here is a stand-in: it reverses the input's "text" (failing when there is none).
"""
import json
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def work(call):
    text = call["input"].get("text")
    if not isinstance(text, str):
        return {"status": "failed", "error": "input.text must be a string"}
    return {"status": "completed", "response": {"reversed": text[::-1]}}


def settle(call):
    request = urllib.request.Request(
        call["completeUrl"],
        data=json.dumps(work(call)).encode(),
        headers={"Authorization": "Bearer " + call["token"], "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        print("settled", call["resultId"], answer.status, flush=True)


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(202)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"accepted": call.get("resultId")}).encode())
        if "completeUrl" in call:
            threading.Thread(target=settle, args=(call,), daemon=True).start()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Hook)
    print("listening on", server.server_address[1], flush=True)
    server.serve_forever()
