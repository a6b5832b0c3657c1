#!/usr/bin/env python3
"""`heaplens stacks --speedscope`: the file validates against speedscope's published JSON schema
(speedscope/file-format-schema.json, vendored; see speedscope/README.md), and its stacks and
weights are those of `heaplens stacks --json` on the same recording.

Validation uses python3's jsonschema when it is installed, else the small validator below,
which implements the part of JSON Schema draft-07 that the speedscope schema uses ($ref to
#/definitions, anyOf, type, const, enum, properties, required, items). Both are run on a
document known to be invalid as well, so a validator that accepts everything fails the test.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def minimal_errors(schema, root, value, path="$"):
    """The validation errors of `value` against `schema` (a subset of draft-07)."""
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/definitions/"), ref
        return minimal_errors(root["definitions"][ref[len("#/definitions/"):]], root, value, path)
    errors = []
    if "anyOf" in schema:
        if all(minimal_errors(s, root, value, path) for s in schema["anyOf"]):
            errors.append(f"{path}: matches none of anyOf")
    kind = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    }
    if kind is not None and not checks[kind](value):
        return errors + [f"{path}: not a {kind}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: not one of {schema['enum']}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: missing {name}")
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                errors += minimal_errors(sub, root, value[name], f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += minimal_errors(schema["items"], root, item, f"{path}[{i}]")
    return errors


def errors_of(schema, doc):
    try:
        import jsonschema
    except ImportError:
        return minimal_errors(schema, schema, doc), "the minimal validator"
    validator = jsonschema.Draft7Validator(schema)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)], "jsonschema"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heaplens", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    subprocess.run([args.fixture, "fixture", args.workdir], check=True)
    db = os.path.join(args.workdir, "stacks.db")
    out = os.path.join(args.workdir, "stacks.speedscope.json")
    with open(args.schema) as f:
        schema = json.load(f)
    failures = 0

    def fail(msg):
        nonlocal failures
        failures += 1
        print("FAIL:", msg, file=sys.stderr)

    for extra in ([], ["--type", "System.String"], ["--by", "survived"], ["--top", "2"]):
        subprocess.run([args.heaplens, "stacks", db, "--speedscope", out] + extra, check=True,
                       capture_output=True)
        with open(out) as f:
            doc = json.load(f)
        errors, how = errors_of(schema, doc)
        if errors:
            fail(f"{extra}: not a valid speedscope file ({how}): {errors[:5]}")
        # the stacks are those of `heaplens stacks --json`, root first, the type as the leaf
        rows = json.loads(subprocess.run(
            [args.heaplens, "stacks", db, "--json", "--top", "1000000"] + [
                a for a in extra if a != "--top" and a != "2"],
            check=True, capture_output=True, text=True).stdout)["rows"]
        if extra == ["--top", "2"]:
            rows = rows[:2]
        frames = [f["name"] for f in doc["shared"]["frames"]]
        by_bytes, by_count = doc["profiles"]
        got = [([frames[i] for i in s], w) for s, w in zip(by_bytes["samples"], by_bytes["weights"])]
        want = [(list(reversed(r["frames"])) + ["new " + r["type"]], r["bytes"]) for r in rows]
        if got != want:
            fail(f"{extra}: stacks by bytes {got} != {want}")
        if by_count["weights"] != [r["count"] for r in rows]:
            fail(f"{extra}: weights by count {by_count['weights']}")
        if by_bytes["unit"] != "bytes" or by_count["unit"] != "none":
            fail(f"{extra}: units {by_bytes['unit']}, {by_count['unit']}")

    # the validator rejects what is not a speedscope file
    bad = dict(doc)
    bad["profiles"] = [dict(doc["profiles"][0], type="sampled", weights="heavy")]
    errors, how = errors_of(schema, bad)
    if not errors:
        fail(f"{how} accepted an invalid document")
    errors = minimal_errors(schema, schema, bad)
    if not errors or minimal_errors(schema, schema, doc):
        fail("the minimal validator disagrees with jsonschema")
    print(f"speedscope files valid ({how}); stacks and weights match `heaplens stacks --json`")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
