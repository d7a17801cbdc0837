#!/usr/bin/env python3
"""The checked-in scheduler examples of docs/distribution/, run as the schedulers would run them.

GitLab CI (gitlab-ci.yml): every job's script lines, the `parallel: N` job once per CI_NODE_INDEX
1..N with CI_NODE_TOTAL=N, the others with CI_NODE_TOTAL=1 (what GitLab sets on a job without
`parallel:`). Kubernetes (kubernetes/gate-job.yaml, merge-job.yaml): the container's command with
the container's env, once per JOB_COMPLETION_INDEX 0..completions-1, then the merge Job's command.
Only two values are replaced, the way a user replaces them: the selection (OPGATE_SELECTION, a
pipeline variable / the env entry) and where the reports volume is mounted (REPORTS).

Each set of shards, merged by the example's own merge step, must equal the unsharded run of the
same selection: the same exit code, the same case ids, each case in exactly one shard, and
results.jsonl identical line for line once timings are dropped and the unsharded lines are put in
merge's order (the inputs' order, each input's lines in its order).
Usage: distribution_test.py <opgate binary> <source dir> <scratch dir>
"""
import json
import os
import re
import shutil
import subprocess
import sys

OPGATE, SRC, WORK = os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3]
DOCS = os.path.join(SRC, "docs", "distribution")
# Both operators' ci tiers with one injected mfrg defect: failing and passing cases in every shard.
SELECTION = "--op moe_finalize_routing_v2_grad --op ffn_worker_batching --tier ci --backend fault:mfrg.k_major_index"
SCHEDULER_VARS = ("OPGATE_SHARD", "OPGATE_SHARD_TOTAL", "CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX",
                  "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS")

failures = 0
passes = 0


def check(what, ok, detail=""):
    global failures, passes
    if ok:
        passes += 1
    else:
        failures += 1
        print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))


# --- a reader for the YAML these examples use: block mappings and lists, `- key: value` items,
# plain, single- or double-quoted scalars, [flow, lists] and comments. Debian's python3 has no YAML
# module by default, and the examples need no more than this.
def _strip_comment(line):
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or line[i - 1] in " [:-,"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _scalar(text):
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(t) for t in inner.split(",")] if inner else []
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return json.loads(text) if text[0] == '"' else text[1:-1].replace("''", "'")
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    return text


def _split_key(text):
    m = re.match(r"^([A-Za-z0-9_.\-/]+):(?:\s+(.*))?$", text)
    return (m.group(1), m.group(2)) if m else (None, None)


def _block(lines, pos, indent):
    """Parses the block of `lines` (pairs (indent, text)) starting at pos at exactly `indent`."""
    if lines[pos][1].startswith("- "):
        items = []
        while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("- "):
            rest = lines[pos][1][2:]
            key, value = _split_key(rest)
            if key is None:
                items.append(_scalar(rest))
                pos += 1
                continue
            # A mapping item: its first key sits at indent + 2, like the keys that follow it.
            lines[pos] = (indent + 2, rest)
            item, pos = _block(lines, pos, indent + 2)
            items.append(item)
        return items, pos
    mapping = {}
    while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith("- "):
        key, value = _split_key(lines[pos][1])
        if key is None:
            raise ValueError(f"unsupported YAML line: {lines[pos][1]!r}")
        pos += 1
        if value is not None and value != "":
            mapping[key] = _scalar(value)
        elif pos < len(lines) and lines[pos][0] > indent:
            mapping[key], pos = _block(lines, pos, lines[pos][0])
        elif pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("- "):
            mapping[key], pos = _block(lines, pos, indent)  # a list at the key's own indent
        else:
            mapping[key] = None
    return mapping, pos


def read_yaml(path):
    lines = []
    for raw in open(path, encoding="utf-8"):
        text = _strip_comment(raw.rstrip("\n"))
        if text.strip():
            lines.append((len(text) - len(text.lstrip(" ")), text.strip()))
    doc, pos = _block(lines, 0, 0)
    if pos != len(lines):
        raise ValueError(f"{path}: unsupported YAML at {lines[pos][1]!r}")
    return doc


# --- runs ---
def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in SCHEDULER_VARS}
    env["PATH"] = os.path.join(WORK, "bin") + os.pathsep + env.get("PATH", "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(argv, env, cwd):
    p = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def drop_timings(value):
    if isinstance(value, dict):
        return {k: drop_timings(v) for k, v in value.items() if k != "ms" and not k.endswith("_ms")}
    if isinstance(value, list):
        return [drop_timings(v) for v in value]
    return value


def results(folder):
    with open(os.path.join(folder, "results.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_json(folder):
    with open(os.path.join(folder, "run.json"), encoding="utf-8") as f:
        return json.load(f)


def compare_with_unsharded(label, shard_dirs, merged_dir, merge_code, unsharded_dir, unsharded_code):
    check(f"{label}: the merge exits like the unsharded run ({unsharded_code})", merge_code == unsharded_code,
          f"merge exit {merge_code}")
    whole = {r["id"]: r for r in results(unsharded_dir)}
    per_shard = [results(d) for d in shard_dirs]
    check(f"{label}: every shard ran cases", all(per_shard), f"cases per shard {[len(s) for s in per_shard]}")
    shard_ids = [r["id"] for s in per_shard for r in s]
    check(f"{label}: each case ran in exactly one shard", sorted(shard_ids) == sorted(whole),
          f"{len(shard_ids)} shard results, {len(set(shard_ids))} distinct, {len(whole)} unsharded")
    merged = results(merged_dir)
    check(f"{label}: merged results are the shards' in input order", [r["id"] for r in merged] == shard_ids)
    check(f"{label}: per-case verdicts equal the unsharded run's",
          {r["id"]: r["verdict"] for r in merged} == {i: r["verdict"] for i, r in whole.items()})
    expected = [drop_timings(whole[r["id"]]) for r in merged if r["id"] in whole]
    check(f"{label}: merged results.jsonl equals the unsharded one modulo timings and order",
          [drop_timings(r) for r in merged] == expected)
    verdicts = {r["verdict"] for r in merged}
    check(f"{label}: the selection has failing and passing cases", {"FAILED", "PASSED"} <= verdicts, str(verdicts))


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "bin"))
    os.symlink(OPGATE, os.path.join(WORK, "bin", "opgate"))  # the examples call `opgate` from PATH

    code, out = run(["sh", "-c", f"opgate run {SELECTION} --out unsharded -q"], clean_env(), WORK)
    unsharded = os.path.join(WORK, "unsharded")
    check("the unsharded run fails (the injected defect)", code == 1, out[-500:])
    check("the unsharded run has no shard line", "shard " not in out.split("cases:")[0], out[:300])

    # --- GitLab CI: parallel jobs, then the merge job ---
    ci = read_yaml(os.path.join(DOCS, "gitlab-ci.yml"))
    variables = dict(ci.get("variables") or {})
    check("gitlab: the example names the selection variable", "OPGATE_SELECTION" in variables)
    variables["OPGATE_SELECTION"] = SELECTION
    jobs = {name: job for name, job in ci.items() if isinstance(job, dict) and "script" in job}
    stages = ci.get("stages") or []
    parallel = [n for n, j in jobs.items() if "parallel" in j]
    check("gitlab: one parallel job and one merge job", len(parallel) == 1 and len(jobs) == 2, str(list(jobs)))
    gl = os.path.join(WORK, "gitlab")
    os.makedirs(gl)
    merge_code = None
    for name in sorted(jobs, key=lambda n: stages.index(jobs[n]["stage"])):
        job = jobs[name]
        total = job.get("parallel", 1)
        for index in range(1, total + 1) if "parallel" in job else [None]:
            extra = dict(variables, CI_NODE_TOTAL=total)
            if index is not None:
                extra["CI_NODE_INDEX"] = index
            for line in job["script"]:
                code, out = run(["bash", "-c", line], clean_env(**extra), gl)
                if index is not None:
                    check(f"gitlab: {name} {index}/{total} exits 0 or 1", code in (0, 1), out[-500:])
                    want = f"shard {index - 1}/{total} from CI_NODE_INDEX={index} CI_NODE_TOTAL={total} " \
                           f"(GitLab CI parallel, 1-based)"
                    check(f"gitlab: {name} {index}/{total} prints its shard's source", want in out, out[:300])
                else:
                    merge_code = code
    check("gitlab: the parallel job runs 3 shards", jobs[parallel[0]]["parallel"] == 3)
    gl_shards = [os.path.join(gl, "reports", f"shard-{i}") for i in (1, 2, 3)]
    check("gitlab: each shard's run.json records its 0-based shard",
          [run_json(d).get("shard") for d in gl_shards] == ["0/3", "1/3", "2/3"])
    check("gitlab: run.json says where the shard came from",
          run_json(gl_shards[1]).get("scheduler", {}).get("shard_from", "").startswith("CI_NODE_INDEX=2 "))
    compare_with_unsharded("gitlab", gl_shards, os.path.join(gl, "reports", "gate"), merge_code, unsharded, 1)

    # --- Kubernetes: the Indexed Job, then the merge Job ---
    gate = read_yaml(os.path.join(DOCS, "kubernetes", "gate-job.yaml"))
    merge = read_yaml(os.path.join(DOCS, "kubernetes", "merge-job.yaml"))
    spec = gate["spec"]
    check("k8s: the gate Job is Indexed", spec.get("completionMode") == "Indexed")
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: str(e["value"]) for e in container.get("env", [])}
    completions = spec["completions"]
    check("k8s: OPGATE_SHARD_TOTAL equals the Job's completions", env.get("OPGATE_SHARD_TOTAL") == str(completions),
          f"{env.get('OPGATE_SHARD_TOTAL')} vs {completions}")
    check("k8s: the Job runs 3 shards", completions == 3)
    k8s = os.path.join(WORK, "k8s")
    os.makedirs(k8s)
    env.update(OPGATE_SELECTION=SELECTION, REPORTS=k8s)
    for index in range(completions):
        code, out = run(container["command"], clean_env(JOB_COMPLETION_INDEX=index, **env), WORK)
        check(f"k8s: pod {index} completes (a failing case is a verdict, not a pod failure)", code == 0, out[-500:])
        want = f"shard {index}/{completions} from JOB_COMPLETION_INDEX={index} OPGATE_SHARD_TOTAL={completions} " \
               f"(Kubernetes Indexed Job, 0-based)"
        check(f"k8s: pod {index} prints its shard's source", want in out, out[:300])
    merge_container = merge["spec"]["template"]["spec"]["containers"][0]
    merge_env = {e["name"]: str(e["value"]) for e in merge_container.get("env", [])}
    merge_env["REPORTS"] = k8s
    merge_code, out = run(merge_container["command"], clean_env(**merge_env), WORK)
    k8s_shards = [os.path.join(k8s, f"shard-{i}") for i in range(completions)]
    compare_with_unsharded("k8s", k8s_shards, os.path.join(k8s, "gate"), merge_code, unsharded, 1)

    # The merge step refuses a missing shard rather than gate on part of the cases.
    shutil.rmtree(k8s_shards[1])
    shutil.rmtree(os.path.join(k8s, "gate"))
    code, out = run(merge_container["command"], clean_env(**merge_env), WORK)
    check("k8s: merging with a shard missing exits 2", code == 2, out[-300:])
    check("k8s: ... and names the missing shard", "shard 1/3 missing" in out, out[-300:])

    print(f"distribution tests: {passes} passed, {failures} failed")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
