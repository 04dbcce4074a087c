"""Verbs of the GPU reference family: make-bundle, serve, native, check.
Exit status: 0 success; 1 check gates failed or serve could not start;
2 usage error or an unreadable or malformed bundle, corpus or request file;
3 no usable GPU (the family computes on CUDA)."""
import argparse
import json
import os
import sys
import tempfile

from . import bundle as bundlemod


def _model(args, log=None):
    """Loads the bundle onto the GPU(s). Imported lazily: only here is
    torch needed."""
    b = bundlemod.load(args.bundle)
    from . import model as modelmod
    from .task import Task

    try:
        m = modelmod.Model(b, allow_cpu=os.environ.get("TRTMC_REFGPU_ALLOW_CPU") == "1")
    except modelmod.ModelError as e:
        raise SystemExit(_fail(3, "model", str(e)))
    return b, m, Task(m)


def _fail(code, what, msg):
    print(json.dumps({"level": "error", "event": what + "_failed", "error": msg}), file=sys.stderr)
    return code


def main(argv):
    ap = argparse.ArgumentParser(prog="refgpu")
    sub = ap.add_subparsers(dest="verb", required=True)
    mb = sub.add_parser("make-bundle")
    mb.add_argument("--out", required=True)
    mb.add_argument("--precision", default="fp32")
    mb.add_argument("--seed", type=int, default=1)
    mb.add_argument("--tp", type=int, default=1)
    mb.add_argument("--size", default="full")
    sv = sub.add_parser("serve")
    sv.add_argument("bundle")
    sv.add_argument("--model-name", required=True)
    sv.add_argument("--records", required=True)
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--queue-size", type=int, default=16)
    sv.add_argument("--shutdown-grace-ms", type=int, default=5000)
    sv.add_argument("--max-body-bytes", type=int, default=32 << 20)
    sv.add_argument("--api-key", default=os.environ.get("TRTMC_SERVE_TOKEN", ""))
    sv.add_argument("--allow-non-loopback", action="store_true")
    nt = sub.add_parser("native")
    nt.add_argument("--bundle", required=True)
    nt.add_argument("--requests", required=True)
    nt.add_argument("--out", required=True)
    ck = sub.add_parser("check")
    ck.add_argument("--bundle", required=True)
    ck.add_argument("--corpus", required=True)
    ck.add_argument("--out", required=True)
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        if args.verb == "make-bundle":
            print(bundlemod.make(args.out, args.precision, args.seed, args.tp, args.size))
            return 0
        if args.verb == "serve":
            return _serve(args)
        if args.verb == "native":
            from . import native

            _, _, task = _model(args)
            try:
                native.run(task, args.requests, args.out)
            except (native.InputError, OSError) as e:
                return _fail(2, "native", str(e))
            return 0
        if args.verb == "check":
            from . import check

            b, _, task = _model(args)
            try:
                res = check.run(task, b.sha256, args.corpus)
            except (OSError, ValueError, KeyError) as e:
                return _fail(2, "check", "corpus %s: %s" % (args.corpus, e))
            d = os.path.dirname(os.path.abspath(args.out))
            fd, tmp = tempfile.mkstemp(prefix=".check-", dir=d)
            with os.fdopen(fd, "w") as f:
                json.dump(res, f, indent=2)
                f.write("\n")
            os.replace(tmp, args.out)
            return 0 if res["passed"] else 1
    except bundlemod.BundleError as e:
        return _fail(2, args.verb, str(e))
    except ValueError as e:
        return _fail(2, args.verb, str(e))
    return 2


def _serve(args):
    from .server import Log, Server

    log = Log()
    log("server_starting", pid=os.getpid())
    if args.queue_size < 0 or args.shutdown_grace_ms < 0 or args.max_body_bytes < 1 or not 0 <= args.port <= 65535:
        return _fail(2, "startup", "bad numeric option")
    b, m, task = _model(args, log)
    try:
        srv = Server(task, args.model_name, args.records, host=args.host, port=args.port, queue_size=args.queue_size,
                     grace_s=args.shutdown_grace_ms / 1000.0, max_body=args.max_body_bytes, api_key=args.api_key,
                     allow_non_loopback=args.allow_non_loopback, log=log, bundle_sha256=b.sha256,
                     extra_ready={"tp": b.tp, "devices": [str(d) for d in m.devs], "weight_bytes": m.memory()})
        return srv.serve()
    except (OSError, ValueError) as e:
        log("startup_failed", level="error", error=str(e))
        return 1
