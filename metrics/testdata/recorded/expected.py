#!/usr/bin/env python3
"""Works out TestDirectOnRecordedText's expected values from the recorded
scrapes, independently of the Go code: its own text parser, rates as the
increase between two scrapes over their distance (series present in both,
counter resets restart from zero), quantiles by linear interpolation in the
bucket that holds the rank (the highest finite bound when the rank is in
+Inf). Run it from this folder: python3 expected.py"""
import gzip, re

JOBS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def load(i):
    t = float(open(f"scrape{i}/time").read())
    series = {}
    for job in JOBS:
        for line in gzip.open(f"scrape{i}/{job}.txt.gz", "rt"):
            if line.startswith("#"):
                continue
            m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)', line)
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            labels["__name__"], labels["job"] = m.group(1), job
            series[tuple(sorted(labels.items()))] = float(m.group(4))
    return t, series


S = [load(i) for i in range(3)]


def select(s, name, **match):
    return {k: v for k, v in s.items()
            if dict(k)["__name__"] == name and all(f(dict(k).get(l, "")) for l, f in match.items())}


def rate(name, i, j, by, **match):
    (ti, si), (tj, sj) = S[i], S[j]
    a, b, out = select(si, name, **match), select(sj, name, **match), {}
    for k, v in b.items():
        if k in a:
            inc = v - a[k] if v >= a[k] else v
            g = tuple(dict(k).get(l, "") for l in by)
            out[g] = out.get(g, 0) + inc / (tj - ti)
    return out


def p99(name, i, j, by, **match):
    groups = {}
    for g, v in rate(name + "_bucket", i, j, by + ["le"], **match).items():
        groups.setdefault(g[:-1], []).append((float(g[-1]), v))
    out = {}
    for g, b in groups.items():
        b.sort()
        if b[-1][1] == 0:
            continue
        rank = 0.99 * b[-1][1]
        for idx, (upper, count) in enumerate(b[:-1]):
            if count >= rank:
                start, below = (b[idx - 1][0], b[idx - 1][1]) if idx > 0 else (0, 0)
                out[g] = start + (upper - start) * (rank - below) / (count - below)
                break
        else:
            out[g] = b[-2][0]
    return out


def gauge_sum(name, i, label, **match):
    out = {}
    for k, v in select(S[i][1], name, **match).items():
        out[dict(k)[label]] = out.get(dict(k)[label], 0) + v
    return out


not_watch = dict(verb=lambda v: v not in ("WATCH", "CONNECT"))
mutating = dict(verb=lambda v: v in ("POST", "PUT", "PATCH", "DELETE"))
print("scheduler-throughput 0→1, 0→2:",
      rate("scheduler_schedule_attempts_total", 0, 1, [], result=lambda v: v == "scheduled"),
      rate("scheduler_schedule_attempts_total", 0, 2, [], result=lambda v: v == "scheduled"))
print("etcd-db-size:", [max(select(S[i][1], "etcd_mvcc_db_total_size_in_bytes").values()) for i in range(3)])
print("apiserver-p99-by-verb 0→1:", p99("apiserver_request_duration_seconds", 0, 1, ["verb"], **not_watch))
print("apiserver-p99-by-verb 0→2:", p99("apiserver_request_duration_seconds", 0, 2, ["verb"], **not_watch))
print("apf-dispatched 0→1:", rate("apiserver_flowcontrol_dispatched_requests_total", 0, 1, ["priority_level"]))
print("sli-mutating-p99 0→1 (pods):", {k: v for k, v in p99("apiserver_request_sli_duration_seconds", 0, 1,
      ["resource", "subresource", "verb"], **mutating).items() if k[0] == "pods"})
print("scheduling-sli-p99 0→2:", p99("scheduler_pod_scheduling_sli_duration_seconds", 0, 2, []))
for i in range(3):
    print(f"inflight {i}:", gauge_sum("apiserver_current_inflight_requests", i, "request_kind"))
    w = gauge_sum("apiserver_longrunning_requests", i, "resource", verb=lambda v: v == "WATCH")
    print(f"watchers {i}: pods", w.get("pods"), "nodes", w.get("nodes"))
