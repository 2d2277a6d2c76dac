"""Reads OTLP/HTTP profiles request bodies with OpenTelemetry's own definitions (PyPI's
opentelemetry-proto) and prints, per body, what the push test compares with the profile's pprof
export: the resource and scope, and per profile its sample type, period, times, total and
per-function flat and cumulative values (a function counted once per stack, as pprof does).

Checks on the way what the protocol requires of the dictionary: every table's entry 0 is its
zero value, and every index points into its table.

usage: python otlp_totals.py BODY... (each gzipped, as sent with Content-Encoding: gzip)
"""

import gzip
import json
import sys

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
from opentelemetry.proto.profiles.v1development import profiles_pb2


def any_value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def check_dictionary(d):
    assert d.string_table[0] == "", "string_table[0] must be empty"
    assert d.mapping_table[0] == profiles_pb2.Mapping(), "mapping_table[0] must be zero"
    assert d.location_table[0] == profiles_pb2.Location(), "location_table[0] must be zero"
    assert d.function_table[0] == profiles_pb2.Function(), "function_table[0] must be zero"
    assert d.stack_table[0] == profiles_pb2.Stack(), "stack_table[0] must be zero"
    assert d.attribute_table[0] == profiles_pb2.KeyValueAndUnit(), "attribute_table[0] must be zero"
    link = d.link_table[0]
    assert link.trace_id == bytes(16) and link.span_id == bytes(8), "link_table[0] must be zero"
    strings = len(d.string_table)
    for f in d.function_table:
        for i in (f.name_strindex, f.system_name_strindex, f.filename_strindex):
            assert 0 <= i < strings
    for loc in d.location_table:
        assert 0 <= loc.mapping_index < len(d.mapping_table)
        for line in loc.lines:
            assert 0 < line.function_index < len(d.function_table)
    for s in d.stack_table:
        for i in s.location_indices:
            assert 0 < i < len(d.location_table)


def read(path):
    request = profiles_service_pb2.ExportProfilesServiceRequest()
    request.ParseFromString(gzip.decompress(open(path, "rb").read()))
    d = request.dictionary
    check_dictionary(d)
    s = d.string_table
    out = {"resources": []}
    for rp in request.resource_profiles:
        resource = {kv.key: any_value(kv.value) for kv in rp.resource.attributes}
        scopes = []
        for sp in rp.scope_profiles:
            profiles = []
            for p in sp.profiles:
                functions = {}
                total = 0
                for sample in p.samples:
                    assert len(sample.values) == 1 and not sample.timestamps_unix_nano
                    v = sample.values[0]
                    total += v
                    stack = d.stack_table[sample.stack_index].location_indices
                    names = [
                        s[d.function_table[d.location_table[i].lines[0].function_index].name_strindex]
                        for i in stack
                    ]
                    for n in set(names):
                        functions.setdefault(n, [0, 0])[1] += v
                    if names:
                        functions.setdefault(names[0], [0, 0])[0] += v
                profiles.append({
                    "type": s[p.sample_type.type_strindex],
                    "unit": s[p.sample_type.unit_strindex],
                    "period_type": s[p.period_type.type_strindex],
                    "period_unit": s[p.period_type.unit_strindex],
                    "period": p.period,
                    "time_unix_nano": p.time_unix_nano,
                    "duration_nano": p.duration_nano,
                    "profile_id_len": len(p.profile_id),
                    "total": total,
                    "functions": functions,
                })
            scopes.append({"name": sp.scope.name, "version": sp.scope.version, "profiles": profiles})
        out["resources"].append({"attributes": resource, "scopes": scopes})
    return out


if __name__ == "__main__":
    json.dump([read(p) for p in sys.argv[1:]], sys.stdout)
