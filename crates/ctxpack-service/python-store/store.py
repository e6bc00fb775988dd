"""A store written in Python from ctxpack's stores.proto, as a store's team
would write theirs: retrieval over a handful of documents, a policy that
redacts secrets and denies drafts, and a summariser that keeps the first
sentence. Used by `run` to check `ctxpack serve` against it.

    python store.py --port PORT [--fail retrieve,review,...]

The stubs are generated from the .proto at start (grpc_tools.protoc), so
the server always speaks the repository's current contract.
"""

import argparse
import os
import re
import sys
import tempfile
from concurrent import futures

import grpc
from grpc_tools import protoc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "..", "proto")


def generate():
    out = tempfile.mkdtemp(prefix="ctxpack-stores-")
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        os.path.join(PROTO_ROOT, "ctxpack", "stores", "v1", "stores.proto"),
    ]
    if protoc.main(args) != 0:
        sys.exit("protoc failed")
    sys.path.insert(0, out)
    from ctxpack.stores.v1 import stores_pb2, stores_pb2_grpc

    return stores_pb2, stores_pb2_grpc


pb, rpc = generate()

DOCUMENTS = [
    ("py-1", "The JSON grammar allows no trailing comma after the last array value."),
    ("py-2", "Our parser follows the grammar: a comma must be followed by a value."),
    ("py-3", "Deployment password: hunter2. The parser release is on Fridays."),
    ("py-4", "DRAFT: maybe allow trailing commas behind a flag."),
    ("py-5", "Lunch is served at noon."),
    ("py-6", "Why a comma at the end is refused. The parser reads an array as values "
             "separated by commas, so after each comma it expects another value; a closing "
             "bracket there is an error, reported with its line and column. Accepting it "
             "would make documents the parser writes differ from those it reads, and tools "
             "downstream that follow the grammar would refuse them. The error names the "
             "array's opening bracket too, so an editor can show where the list began, and "
             "the message suggests removing the comma rather than adding a value. Lenient "
             "parsing was tried once behind a flag and dropped: files written that way "
             "failed in every other tool the teams used, and nobody could say which files "
             "were affected."),
]


def words(text):
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


class Store(rpc.SourcesServicer, rpc.PolicyServicer, rpc.SummarizerServicer):
    def __init__(self, failing):
        self.failing = failing

    def fail_if(self, name, context):
        if name in self.failing:
            context.abort(grpc.StatusCode.INTERNAL, f"the python store's {name} is failing")

    def Retrieve(self, request, context):
        self.fail_if("retrieve", context)
        q = words(request.query)
        hits = []
        for doc_id, text in DOCUMENTS:
            shared = len(words(text) & q)
            if shared:
                hits.append((shared / max(len(q), 1), doc_id, text))
        hits.sort(key=lambda h: (-h[0], h[1]))
        answer = [
            pb.Candidate(
                id=doc_id,
                section=pb.SECTION_RELEVANT_KNOWLEDGE,
                text=text,
                provenance=pb.Provenance(source_kind="chunk", reference=f"python/{doc_id}", source_version="rev-1"),
                trust=pb.TRUST_TIER_TRUSTED,
                score=score,
            )
            for score, doc_id, text in hits[: request.limit]
        ]
        return pb.RetrieveReply(answer=answer)

    def Review(self, request, context):
        self.fail_if("review", context)
        verdicts = []
        for item in request.items:
            if item.text.startswith("DRAFT"):
                verdicts.append(pb.Verdict(deny="drafts are not published"))
            elif "password" in item.text:
                verdicts.append(pb.Verdict(redact=re.sub(r"password: \S+", "password: [redacted]", item.text)))
            else:
                verdicts.append(pb.Verdict(allow=pb.Unit()))
        return pb.ReviewReply(answer=verdicts)

    def Summarize(self, request, context):
        self.fail_if("summarize", context)
        profile = dict(context.invocation_metadata()).get("x-compression-profile", "")
        # Well within the target: the profile's tag and a few leading words.
        return pb.SummarizeReply(
            answer=[f"[{profile}] " + " ".join(r.text.split()[: max(r.target_tokens // 3, 1)]) for r in request.requests]
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fail", default="")
    args = parser.parse_args()
    store = Store({f for f in args.fail.split(",") if f})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    rpc.add_SourcesServicer_to_server(store, server)
    rpc.add_PolicyServicer_to_server(store, server)
    rpc.add_SummarizerServicer_to_server(store, server)
    server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print("serving", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
