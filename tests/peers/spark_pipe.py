#!/usr/bin/env python3
"""phiward as a pipe stage of Apache Spark (issue 33; docs/scale-out.md), in local mode.

    spark_pipe.py PHIWARD [--records N] [--workdir DIR]        the CI check
    spark_pipe.py PHIWARD --measure N [--workdir DIR]          throughput, N synthetic records

The check:
  1. writes a folder of synthetic messages: HL7 v2 ADT and ORU messages and FHIR Patients made
     from templates, with marker values (MKR + 5 digits + X) in the names, addresses and
     identifiers, patients repeating across messages; the fixtures of fixtures/hl7v2/valid,
     fixtures/hl7v2/markers and fixtures/fhir/valid; truncated copies (records that fail);
     Latin-1 ones (sent as content_base64). File names are neutral (a name can be patient data);
  2. runs a PySpark driver (local[2]) in a child process, its stdout and stderr (Spark's logs
     at INFO, the Python workers' and phiward's stderr under RUST_LOG=trace) captured to files:
     it reads the folder, builds json-lines records (parallelized from the driver), RDD.pipe's them through
     `phiward redact --input-format json-lines --policy fixtures/scale_out/keyed.toml
     --key-file ...` in 1 and 8 partitions and through `phiward validate --input-format
     json-lines` in 8, and writes each result set as Parquet;
  3. checks: counts in = counts out (read back from the Parquet); every record's result equals
     the single-machine CLI's (one `phiward ... --input-format json-lines` process over all the
     records, and for a sample the single-record CLI on the message itself: the same redacted
     bytes, the same exit code); the redactions in 1 and 8 partitions are identical, so
     pseudonyms, hashes and date shifts agree; no marker in the captured stderr and logs.

Exit 0 when every check passes, 1 when one fails; SKIPPED (exit 0, said on stdout) when Java
or pyspark cannot be had: the CI step (scripts/ci-extra) installs pyspark into a venv first.

--measure N: N synthetic HL7 v2 messages redacted (keyed policy) by the single-process CLI (the
native stream, and json-lines) and by Spark local[2] through RDD.pipe (a line per element, and
64 files of json-lines read whole, an element per file); prints records per
second per core of each, the pipe overhead, and checks that Spark's results equal the
single-process run's (counts, and an order-free digest of every result line).
"""

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY = os.path.join(ROOT, "fixtures", "scale_out", "keyed.toml")
KEY = os.path.join(ROOT, "fixtures", "redact", "golden", "test.key")
MARKER = re.compile(rb"MKR[0-9]")
# --measure: the json-lines records are also split into this many files, each read whole.
FILES = 64
# Spark settings for a pipe stage on small executors (docs/scale-out.md, "Settings"): the serial
# collector does its work on the thread that allocates, so no collector threads take turns with
# the phiward processes on the executor's cores, and a young generation large enough for a task's
# strings. PHIWARD_SPARK_CONF="k=v;k=v" adds or overrides settings (an empty value removes one).
SPARK_PIPE_CONF = {
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -Xmn768m",
    "spark.driver.memory": "2g",
}
for _kv in os.environ.get("PHIWARD_SPARK_CONF", "").split(";"):
    if _kv:
        _key, _value = _kv.split("=", 1)
        SPARK_PIPE_CONF[_key] = _value
SPARK_PIPE_CONF = {k: v for k, v in SPARK_PIPE_CONF.items() if v}
# The buffer between a Spark task and the pipe stage's standard input, for the `jvm-buffer` run of
# --measure (Scala's `RDD.pipe(command, env, separateWorkingDir, bufferSize)`).
PIPE_BUFFER = int(os.environ.get("PHIWARD_PIPE_BUFFER", str(1 << 20)))


def hl7_message(i, patients):
    p = i % patients
    m = i % 100000
    day = 1 + i % 28
    if i % 3 == 2:
        return (
            f"MSH|^~\\&|LAB|FAC|RCV|RFAC|2024{1 + i % 12:02}{day:02}0830||ORU^R01^ORU_R01|L{i:07}|P|2.5.1\r"
            f"PID|1||PAT{p:06}^^^HOSP^MR||MKR{m:05}X^MKR{(m + 1) % 100000:05}X||19{40 + p % 50:02}0315|F\r"
            f"OBR|1|ORD{i:07}||2345-7^Glucose^LN|||2024{1 + i % 12:02}{day:02}0800\r"
            f"OBX|1|NM|2345-7^Glucose^LN||{70 + i % 60}|mg/dL^mg/dL^UCUM|||||F\r"
            f"OBX|2|ST|8251-1^Note^LN||MKR{(m + 2) % 100000:05}X called||||||F\r"
        ).encode()
    return (
        f"MSH|^~\\&|APP|FAC|RCV|RFAC|2024{1 + i % 12:02}{day:02}103000||ADT^A01^ADT_A01|M{i:07}|P|2.5.1\r"
        f"EVN|A01|2024{1 + i % 12:02}{day:02}103000\r"
        f"PID|1||PAT{p:06}^^^HOSP^MR||MKR{m:05}X^JANE^Q||19{40 + p % 50:02}0315|F|||"
        f"{i % 900 + 1} MKR{(m + 3) % 100000:05}X ST^^SPRINGFIELD^MA^01103^USA||^PRN^PH^^1^413^555{i % 10000:04}"
        f"|||||ACCT{p:05}\r"
        f"PV1|1|I|W^{i % 40}^1\r"
    ).encode()


def fhir_patient(i, patients):
    p = i % patients
    m = i % 100000
    return json.dumps(
        {
            "resourceType": "Patient",
            "id": f"pat{p}",
            "identifier": [{"system": "http://example.org/mrn", "value": f"MKR{m:05}X"}],
            "name": [{"family": f"MKR{(m + 4) % 100000:05}X", "given": ["Ann"]}],
            "gender": "female",
            "birthDate": f"19{40 + p % 50:02}-03-15",
        }
    ).encode()


def write_messages(folder, n):
    """The folder of messages: synthetic ones, fixtures, truncated and Latin-1 copies."""
    os.makedirs(folder)
    names = []

    def put(data, ext):
        name = f"msg-{len(names):06d}.{ext}"
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        names.append(name)

    fixtures = []
    for sub in ("hl7v2/valid", "hl7v2/markers", "fhir/valid"):
        d = os.path.join(ROOT, "fixtures", sub)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".ndjson"):
                with open(os.path.join(d, f), "rb") as fh:
                    fixtures.append((fh.read(), f.rsplit(".", 1)[-1]))
    for data, ext in fixtures:
        put(data, ext)
    patients = max(7, n // 20)
    i = 0
    while len(names) < n:
        if i % 10 == 9:
            put(fhir_patient(i, patients), "json")
        elif i % 50 == 7:
            # A message cut short: it fails (or is invalid) and the stream goes on.
            msg = hl7_message(i, patients)
            put(msg[: len(msg) // 3], "hl7")
        elif i % 50 == 13:
            # Not a message at all: the record fails (CLI_FORMAT_UNDETECTED or the like).
            put(b"MKR%05dX is not a message\n" % (i % 100000), "txt")
        elif i % 50 == 11:
            # Latin-1 under an 8859/1 declaration: not UTF-8, sent as content_base64.
            msg = hl7_message(i, patients).replace(b"JANE", b"J\xc9R\xd4ME")
            put(msg.replace(b"|P|2.5.1\r", b"|P|2.5.1||||||8859/1\r", 1), "hl7")
        else:
            put(hl7_message(i, patients), "hl7")
        i += 1
    return names


def record_line(rid, data):
    try:
        return json.dumps({"id": rid, "content": data.decode("utf-8")})
    except UnicodeDecodeError:
        return json.dumps({"id": rid, "content_base64": base64.b64encode(data).decode()})


REDACT = ["redact", "--input-format", "json-lines", "--policy", POLICY, "--key-file", KEY, "-"]
VALIDATE = ["validate", "--input-format", "json-lines", "-"]


# ---------------------------------------------------------------------------------------------
# The driver: runs in a child process so that its stderr (Spark's logs, the workers', phiward's)
# can be captured whole.


def driver(args):
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("phiward-pipe")
        .set("spark.ui.enabled", "false")
        .set("spark.sql.shuffle.partitions", "8")
        .set("spark.driver.memory", "1g")
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("INFO")
    spark = SparkSession(sc)
    phiward = args.phiward
    # What every executor runs: in local mode the binary, policy and key are local paths; on a
    # cluster they are shipped with --files (docs/scale-out.md).
    env = {"RUST_LOG": "trace", "PATH": os.environ.get("PATH", "")}

    # The folder is read on the driver and parallelized: Hadoop's binaryFiles pays tens of
    # milliseconds per small local file (3,000 files: over a minute on this machine), which would
    # measure the file system, not the stage. On a cluster, sc.binaryFiles(folder) feeds the same
    # records (docs/scale-out.md).
    lines = []
    for name in sorted(os.listdir(args.folder)):
        with open(os.path.join(args.folder, name), "rb") as f:
            lines.append(record_line(name, f.read()))

    def records(partitions):
        return sc.parallelize(lines, partitions)

    import shlex

    def pipe(rdd, command):
        return rdd.pipe(shlex.join([phiward] + command), env=env, checkCode=True)

    # A canary: what a piped command writes on stderr reaches the captured log, so the marker
    # scan below reads what phiward wrote there.
    sc.parallelize(["x"], 1).pipe("sh -c 'echo CANARY-STDERR-7731 >&2; cat'").collect()
    out = {}
    for name, command, partitions in (
        ("redact-1", REDACT, 1),
        ("redact-8", REDACT, 8),
        ("validate-8", VALIDATE, 8),
    ):
        started = time.time()
        inputs = records(partitions)
        results = pipe(inputs, command)
        rows = results.map(lambda line: json.loads(line)).map(
            lambda r: (
                r.get("id"),
                r["ok"],
                r["status"],
                r["exit"],
                r.get("code"),
                json.dumps(r.get("data"), sort_keys=True) if "data" in r else None,
                r.get("line"),
            )
        )
        df = spark.createDataFrame(rows, "id string, ok boolean, status string, exit int, code string, data string, line long")
        path = os.path.join(args.workdir, f"{name}.parquet")
        df.write.mode("overwrite").parquet(path)
        seconds = round(time.time() - started, 2)
        # Read back from the Parquet files, for the parent's checks.
        rows_path = path + ".rows.json"
        with open(rows_path, "w") as f:
            json.dump([r.asDict() for r in spark.read.parquet(path).collect()], f)
        out[name] = {"in": inputs.count(), "partitions": inputs.getNumPartitions(), "rows": rows_path, "seconds": seconds}
    with open(os.path.join(args.workdir, "driver.json"), "w") as f:
        json.dump(out, f)
    spark.stop()


def measure_driver(args):
    """Spark local[2]: the json-lines records through `phiward redact`, written as text files, by
    the JVM's pipe (Scala/Java `RDD.pipe`, reached through py4j: no Python in the data path) and
    by PySpark's `RDD.pipe` (each line through a Python worker).

    The machine's speed drifts by up to a third between minutes (a shared virtual machine), so
    the single-process run is timed in every round, right before the Spark runs it is compared
    with, from this driver while the JVM idles; the figures are the per-round ratios' median."""
    from pyspark import SparkConf, SparkContext
    import shlex

    conf = SparkConf().setMaster("local[2]").setAppName("phiward-measure").set("spark.ui.enabled", "false")
    for key, value in SPARK_PIPE_CONF.items():
        conf = conf.set(key, value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("WARN")
    command = [args.phiward] + REDACT
    jl = os.path.join(args.folder, "records.jsonl")
    files = args.folder + "-files"
    timings = {"single": [], "cat": [], "jvm": [], "jvm-buffer": [], "cat-files": [], "jvm-files": [], "pyspark": []}

    def single():
        # Every timed run starts with no dirty pages: the previous run's output is written back
        # first, outside the timing, so no run pays for another's writes.
        os.sync()
        with open(jl, "rb") as fin, open(os.path.join(args.workdir, "single-round.jsonl"), "wb") as fout:
            t = time.time()
            subprocess.run(command, stdin=fin, stdout=fout, stderr=subprocess.DEVNULL, check=True)
            return time.time() - t

    def timed(name, job):
        out = os.path.join(args.workdir, f"out-{name}")
        shutil.rmtree(out, ignore_errors=True)
        os.sync()
        started = time.time()
        job().saveAsTextFile(out)
        timings[name].append(time.time() - started)

    # Warm-up: the JVM's first job pays class loading and JIT (text input, pipe, text output);
    # measured runs follow.
    warm = sc._jsc.textFile(jl, args.partitions).sample(False, 0.001, 7).pipe(" ".join(command))
    warm.saveAsTextFile(os.path.join(args.workdir, "out-warm-up"))
    for _ in range(args.rounds):
        timings["single"].append(single())
        # The stage's own cost apart: the same records through `cat`, an identity pipe stage.
        timed("cat", lambda: sc._jsc.textFile(jl, args.partitions).pipe("cat"))
        timed("jvm", lambda: sc._jsc.textFile(jl, args.partitions).pipe(" ".join(command)))
        # The same with a larger buffer between the task and phiward's standard input (the Scala
        # `RDD.pipe`'s bufferSize, 8 KiB by default): fewer hand-overs between the two processes.
        timed("jvm-buffer", lambda: sc._jsc.textFile(jl, args.partitions).pipe(
            command, {}, False, PIPE_BUFFER))
        timed("cat-files", lambda: sc._jsc.wholeTextFiles(files, args.partitions).values().pipe("cat"))
        timed("jvm-files", lambda: sc._jsc.wholeTextFiles(files, args.partitions).values().pipe(" ".join(command)))
    timed("pyspark", lambda: sc.textFile(jl, minPartitions=args.partitions).pipe(shlex.join(command), checkCode=True))
    timings["single-pyspark"] = [single()]
    with open(os.path.join(args.workdir, "measure.json"), "w") as f:
        json.dump(timings, f)
    sc.stop()


def digest_lines(lines):
    """Count and an order-free digest of result lines (the sum of each line's SHA-256 prefix)."""
    count, total, failed = 0, 0, 0
    for line in lines:
        line = line.rstrip(b"\n")
        count += 1
        failed += b'"status":"failed"' in line
        total = (total + int.from_bytes(hashlib.sha256(line).digest()[:8], "big")) % (1 << 64)
    return count, total, failed


def digest_dir(folder):
    def lines():
        for name in sorted(os.listdir(folder)):
            if name.startswith("part-"):
                with open(os.path.join(folder, name), "rb") as f:
                    yield from f
    return digest_lines(lines())


# ---------------------------------------------------------------------------------------------
# The checks (the parent process).


def java_and_pyspark(python):
    if not shutil.which("java"):
        return "java is not on the PATH"
    probe = subprocess.run([python, "-c", "import pyspark"], capture_output=True)
    if probe.returncode != 0:
        return f"pyspark cannot be imported by {python}"
    return None


def run_driver(python, args, mode, log_name):
    log = os.path.join(args.workdir, log_name)
    cmd = [python, os.path.abspath(__file__), args.phiward, mode, "--workdir", args.workdir, "--folder", args.folder]
    if mode == "--measure-driver":
        cmd += ["--partitions", str(args.partitions), "--rounds", str(args.rounds)]
    with open(log, "wb") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, "PYSPARK_PYTHON": python})
    return proc.returncode, log


def single_process(phiward, command, lines):
    """The single-machine CLI: one phiward process over every record."""
    proc = subprocess.run([phiward] + command, input=("\n".join(lines) + "\n").encode(), capture_output=True)
    assert proc.returncode == 0, f"single process exit {proc.returncode}"
    assert not MARKER.search(proc.stderr), "a marker on the single process's stderr"
    return [json.loads(l) for l in proc.stdout.decode().splitlines()]


def check(args, python):
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    names = write_messages(args.folder, args.records)
    contents = {}
    for name in names:
        with open(os.path.join(args.folder, name), "rb") as f:
            contents[name] = f.read()
    lines = [record_line(n, contents[n]) for n in names]
    rc, log = run_driver(python, args, "--driver", "driver.log")
    with open(log, "rb") as f:
        logged = f.read()
    expect(rc == 0, f"the Spark driver exited {rc} (see {log})")
    expect(not MARKER.search(logged), f"a marker in Spark's logs or the executors' stderr ({log})")
    expect(b"INFO" in logged, "Spark's INFO logs were not captured")
    expect(b"CANARY-STDERR-7731" in logged, "a piped command's stderr was not captured")
    if rc != 0:
        return failures
    with open(os.path.join(args.workdir, "driver.json")) as f:
        runs = json.load(f)
    single = {
        "redact": {r["id"]: r for r in single_process(args.phiward, REDACT, lines)},
        "validate": {r["id"]: r for r in single_process(args.phiward, VALIDATE, lines)},
    }
    results = {}
    for name, run in runs.items():
        with open(run["rows"]) as f:
            rows = json.load(f)
        expect(run["in"] == len(names), f"{name}: {run['in']} records in, {len(names)} files")
        expect(run["partitions"] == int(name.split("-")[1]), f"{name}: {run['partitions']} partitions")
        expect(len(rows) == len(names), f"{name}: {len(rows)} rows out of {len(names)} in")
        by_id = {r["id"]: r for r in rows}
        expect(sorted(by_id) == sorted(names), f"{name}: ids out differ from ids in")
        reference = single[name.split("-")[0]]
        differ = 0
        for rid, row in by_id.items():
            want = reference.get(rid)
            got = (row["ok"], row["status"], row["exit"], row["code"], row["data"])
            exp = want and (
                want["ok"],
                want["status"],
                want["exit"],
                want.get("code"),
                json.dumps(want.get("data"), sort_keys=True) if "data" in want else None,
            )
            differ += got != exp
        expect(differ == 0, f"{name}: {differ} results differ from the single-process run")
        results[name] = by_id
        print(f"{name}: {len(rows)} records in {run['seconds']} s (incl. Parquet)", flush=True)
    expect(results["redact-1"] == results["redact-8"], "redaction differs between 1 and 8 partitions")
    statuses = {}
    for r in results["redact-8"].values():
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    expect(statuses.get("success", 0) > len(names) // 2, f"too few redactions succeeded: {statuses}")
    expect(statuses.get("failed", 0) > 0, f"no failing record exercised: {statuses}")
    # The same patient, the same pseudonym on every partition: PID-3 of the synthetic ADTs.
    pseudonyms = {}
    for rid, r in results["redact-8"].items():
        data = json.loads(r["data"]) if r["data"] else None
        content = data.get("content") if data else None
        if not content or "ADT^A01" not in content or "PID|" not in content:
            continue
        pid = next(s for s in content.split("\r") if s.startswith("PID|"))
        original = contents[rid].decode("latin-1")
        m = re.search(r"PAT(\d{6})", original)
        if m:
            pseudonyms.setdefault(m.group(1), set()).add(pid.split("|")[3])
    expect(len(pseudonyms) >= 7, f"too few patients seen: {len(pseudonyms)}")
    expect(all(len(s) == 1 for s in pseudonyms.values()), "a patient got two pseudonyms")
    expect(len({next(iter(s)) for s in pseudonyms.values()}) == len(pseudonyms), "two patients share a pseudonym")
    # A sample against the single-record CLI on the message itself.
    for name in names[:: max(1, len(names) // 40)]:
        proc = subprocess.run(
            [args.phiward, "redact", "--policy", POLICY, "--key-file", KEY, "-"], input=contents[name], capture_output=True
        )
        row = results["redact-8"][name]
        expect(row["exit"] == proc.returncode, f"{name}: exit {row['exit']} against the CLI's {proc.returncode}")
        data = json.loads(row["data"]) if row["data"] else {}
        got = data["content"].encode() if "content" in data else base64.b64decode(data.get("content_base64", ""))
        expect(row["status"] == "failed" or got == proc.stdout, f"{name}: redacted bytes differ from the CLI's")
    return failures


def measure(args, python):
    n = args.measure
    patients = max(7, n // 20)
    jl = os.path.join(args.folder, "records.jsonl")
    stream = os.path.join(args.workdir, "stream.hl7")
    os.makedirs(args.folder)
    with open(jl, "w") as f, open(stream, "wb") as s:
        for i in range(n):
            msg = hl7_message(i, patients)
            f.write(json.dumps({"id": f"r{i}", "content": msg.decode()}) + "\n")
            s.write(msg)
    print(f"{n} records, {os.path.getsize(jl) / 1e6:.0f} MB of json-lines, {os.path.getsize(stream) / 1e6:.0f} MB of HL7 v2", flush=True)
    # The same records as FILES files of json-lines, each read whole as one Spark element
    # (`wholeTextFiles`): Spark's per-element work is per file, phiward still answers per line.
    # The last line of a file has no line end: `RDD.pipe` writes one after each element.
    files = args.folder + "-files"
    os.makedirs(files)
    with open(jl, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    per = -(-len(lines) // FILES)
    for k in range(FILES):
        chunk = lines[k * per:(k + 1) * per]
        if chunk:
            with open(os.path.join(files, f"part-{k:03}.jsonl"), "wb") as out:
                out.write(b"\n".join(chunk))
    del lines

    def timed(cmd, stdin_path, out_path):
        with open(stdin_path, "rb") as fin, open(out_path, "wb") as fout:
            t = time.time()
            r0 = os.times()
            subprocess.run(cmd, stdin=fin, stdout=fout, stderr=subprocess.DEVNULL, check=False)
            r1 = os.times()
            return time.time() - t, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)

    load = os.getloadavg()[0]
    print(f"load average before: {load:.1f} on {os.cpu_count()} cores", flush=True)
    native = os.path.join(args.workdir, "native.out")
    wall, cpu = timed([args.phiward, "redact", "--policy", POLICY, "--key-file", KEY, "-"], stream, native)
    print(f"single process, native HL7 v2 stream: {wall:.1f} s wall, {cpu:.1f} s CPU: {n / wall:,.0f} records/s "
          f"({n / cpu:,.0f} per CPU-second)", flush=True)
    single = os.path.join(args.workdir, "single.jsonl")
    jwall, jcpu = timed([args.phiward] + REDACT, jl, single)
    print(f"single process, json-lines: {jwall:.1f} s wall, {jcpu:.1f} s CPU: {n / jwall:,.0f} records/s "
          f"({n / jcpu:,.0f} per CPU-second)", flush=True)
    with open(single, "rb") as f:
        jcount, jdigest, jfailed = digest_lines(f)
    rc, log = run_driver(python, args, "--measure-driver", "measure.log")
    if rc != 0:
        print(f"FAILED: the Spark driver exited {rc} (see {log})")
        return 1
    with open(os.path.join(args.workdir, "measure.json")) as f:
        timings = json.load(f)
    ok = jcount == n
    cores = 2

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    singles = timings["single"]
    print(f"{args.rounds} rounds, each: the single-process json-lines run, then Spark local[{cores}] on the same records; "
          f"the single process took {', '.join(f'{t:.1f}' for t in singles)} s", flush=True)
    for name, cat_name, what in (
        ("jvm", "cat", f"one element per line, JVM RDD.pipe, {args.partitions}+ partitions, text out"),
        ("jvm-buffer", "cat", f"the same with RDD.pipe's bufferSize at {PIPE_BUFFER // 1024} KiB (8 KiB by default)"),
        ("jvm-files", "cat-files", f"{FILES} files of json-lines read whole (`wholeTextFiles`), one element per file, "
                                   "JVM RDD.pipe, text out"),
    ):
        runs, cats = timings[name], timings[cat_name]
        ratios = [single / (cores * spark) for single, spark in zip(singles, runs)]
        print(f"Spark local[{cores}], {name}: {what}: {', '.join(f'{t:.1f}' for t in runs)} s wall; per core "
              f"{', '.join(f'{r:.0%}' for r in ratios)} of the same round's single-process run: median "
              f"{median(ratios):.0%}; the same records through `cat` (Spark's text I/O and pipe alone): "
              f"{', '.join(f'{t:.1f}' for t in cats)} s", flush=True)
        count, digest, failed = digest_dir(os.path.join(args.workdir, f"out-{name}"))
        same = count == jcount and digest == jdigest and failed == jfailed
        print(f"  results: {count} lines ({failed} failed) against {jcount} ({jfailed} failed) single-process; "
              f"{'equal' if same else 'DIFFERENT'} (order-free digest of every line)", flush=True)
        ok = ok and same
    py, py_single = timings["pyspark"][0], timings["single-pyspark"][0]
    print(f"Spark local[{cores}], PySpark RDD.pipe (each line through a Python worker), text out: {py:.1f} s wall, "
          f"per core {py_single / (cores * py):.0%} of the single-process run timed after it ({py_single:.1f} s)", flush=True)
    count, digest, failed = digest_dir(os.path.join(args.workdir, "out-pyspark"))
    same = count == jcount and digest == jdigest and failed == jfailed
    print(f"  results: {count} lines ({failed} failed); {'equal' if same else 'DIFFERENT'}", flush=True)
    ok = ok and same
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    with open(log, "rb") as f:
        if MARKER.search(f.read()):
            print("FAILED: a marker in Spark's log")
            ok = False
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phiward")
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--measure", type=int)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir")
    ap.add_argument("--folder")
    ap.add_argument("--driver", action="store_true")
    ap.add_argument("--measure-driver", action="store_true")
    args = ap.parse_args()
    args.phiward = os.path.abspath(args.phiward)
    if args.driver:
        return driver(args)
    if args.measure_driver:
        return measure_driver(args)
    python = sys.executable
    why = java_and_pyspark(python)
    if why:
        print(f"SKIPPED: the Spark pipe test needs Java and pyspark: {why}")
        return 0
    if not os.access(args.phiward, os.X_OK):
        print(f"FAILED: no phiward binary at {args.phiward}")
        return 2
    args.workdir = os.path.abspath(args.workdir or os.path.join(ROOT, "target", "spark-pipe"))
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    args.folder = os.path.join(args.workdir, "messages")
    started = time.time()
    if args.measure:
        return measure(args, python)
    failures = check(args, python)
    for f in failures:
        print(f"FAILED: {f}")
    if not failures:
        print(f"ok: {args.records} records through Spark local[2] (RDD.pipe, Parquet), "
              f"equal to the single-process CLI, the same in 1 and 8 partitions, no marker in the logs "
              f"({time.time() - started:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
