"""The Go text/template subset that workload templates use (phalanx.sim.template)."""

from __future__ import annotations

import pytest

from phalanx.sim.template import Template, TemplateError

CASES = [
    ("field", "name: gang-{{.Index}}", {"Index": 7}, "name: gang-7"),
    ("spaces", "n-{{ .Index }}", {"Index": 3}, "n-3"),
    ("DivideInt", "gang-{{DivideInt .Index .podsPerGroup}}", {"Index": 7, "podsPerGroup": 3}, "gang-2"),
    ("Mod", "c-{{Mod .Index .PodGroupCount}}", {"Index": 12, "PodGroupCount": 5}, "c-2"),
    ("nested call", "{{AddInt 8000 (Mod .Index (DivideInt .podsCount .nodesCount))}}",
     {"Index": 13, "podsCount": 1000, "nodesCount": 100}, "8003"),
    ("if true", "{{if .hostPortBase}}port{{end}}", {"hostPortBase": 9000}, "port"),
    ("if missing", "{{if .hostPortBase}}port{{else}}none{{end}}", {}, "none"),
    ("else if", "{{if eq .m \"All\"}}all{{else if .m}}other{{else}}none{{end}}", {"m": "Pod"}, "other"),
    ("and/eq", "{{if and .m (eq .m \"All\")}}all{{end}}", {"m": "All"}, "all"),
    ("trim", "a:\n  {{- if .x}}\n  b{{- end}}", {"x": 1}, "a:\n  b"),
    ("pipeline", "{{(or .n 2) | Int}}", {}, "2"),
    ("range int", "{{range 3}}r{{.}} {{end}}", {}, "r0 r1 r2 "),
    ("variable", "{{$n := AddInt .a 1}}{{$n}}{{$n}}", {"a": 1}, "22"),
    ("JSON", "{{.sel | JSON}}", {"sel": ["a"]}, '["a"]'),
    ("missing prints no value", "{{.nothing}}", {}, "<no value>"),
    ("comment", "x{{/* hidden */}}y", {}, "xy"),
    ("negative division truncates", "{{DivideInt -7 2}}", {}, "-3"),
]


@pytest.mark.parametrize("text,data,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_render(text, data, want):
    assert Template(text).render(data) == want


@pytest.mark.parametrize("text,message", [
    ("{{if .x}}open", "missing {{end}}"),
    ("{{end}}", "unexpected {{end}}"),
    ("{{Nope .x}}", 'function "Nope" not defined'),
    ("{{with .x}}{{end}}", "{{with}} is not supported"),
])
def test_parse_errors(text, message):
    with pytest.raises(TemplateError, match=message.replace("{", r"\{").replace("}", r"\}")):
        Template(text)


def test_divide_by_zero_is_an_error():
    with pytest.raises(TemplateError, match="divide by zero"):
        Template("{{DivideInt .Index .k}}").render({"Index": 1, "k": 0})
