"""DRA CEL selectors: the `device` variable, Kubernetes' quantity/semver libraries, errors, limits."""

from __future__ import annotations

import logging

import pytest

from phalanx.machinery.featuregates import FeatureGates
from phalanx.dra.cel.compiler import SelectorCache, compile_selector
from phalanx.dra.cel.device import CELDevice
from phalanx.dra.cel.environment import COST_LIMIT, CELCompileError, CELFeatures, CELRuntimeError
from phalanx.dra.cel.validation import check_expression
from phalanx.dra.testing import dev, gpu_devices, version

DRIVER = "gpu.example.com"
GPU = gpu_devices(1, "node-1")[0]  # index 0, uuid, model LATEST-GPU-MODEL, driverVersion 1.0.0, 80Gi
LISTS = CELFeatures(consumable_capacity=True, list_type_attributes=True)


def run(expression: str, device: dict = GPU, features: CELFeatures = CELFeatures(), direct: bool = True) -> bool:
    selector = compile_selector(expression, features, direct=direct)
    if selector.error:
        raise selector.error
    return selector.matches(CELDevice(DRIVER, device, features))


def outcome(expression: str, device: dict = GPU, features: CELFeatures = CELFeatures(), direct: bool = True):
    try:
        return run(expression, device, features, direct)
    except (CELCompileError, CELRuntimeError) as e:
        return (type(e).__name__, e.message)


# -- the dra-example-driver selectors ------------------------------------------------------------------

@pytest.mark.parametrize("expression, expected", [
    ("device.driver == 'gpu.example.com'", True),
    ("device.driver == 'other.example.com'", False),
    ("device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'", True),
    ("device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0", True),
    ("device.capacity['gpu.example.com'].memory.compareTo(quantity('100Gi')) >= 0", False),
    ("device.attributes['gpu.example.com'].index < 4 && 'gpu.example.com' in device.attributes", True),
    ("device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('0.9.0'))", True),
    ("device.attributes['gpu.example.com'].uuid.startsWith('gpu-node-1')", True),
])
def test_example_driver_selectors(expression, expected):
    assert run(expression) is expected


# -- the device variable -----------------------------------------------------------------------------

def test_attribute_domains_default_to_the_driver_and_qualified_names_keep_theirs():
    d = dev("d", attrs={"name": True, "other.example.com/name": 5})
    assert run('device.attributes["gpu.example.com"].name', d)
    assert run('device.attributes["other.example.com"].name == 5', d)
    assert run('device.attributes["gpu.example.com"]["name"]', d)


def test_unknown_domain_is_an_empty_map_and_unknown_name_an_error():
    assert run('"x" in device.attributes["no-such-domain.com"]') is False
    assert run('"no-such-domain.com" in device.attributes') is False
    assert run('size(device.attributes["no-such-domain.com"]) == 0')
    with pytest.raises(CELRuntimeError) as err:
        run('device.attributes["no-such-domain.com"].noSuchAttr.isGreaterThan(quantity("0"))')
    assert err.value.message == "no such key: noSuchAttr"
    with pytest.raises(CELRuntimeError, match="no such key: noSuchAttr"):
        run('device.attributes["gpu.example.com"]["noSuchAttr"] == 1')


def test_capacity_domains_and_allow_multiple_allocations():
    d = dev("d", capacity={"memory": "1Mi", "other.com/slots": "4"})
    d["allowMultipleAllocations"] = True
    assert run('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("1Ki"))', d)
    assert run('device.capacity["other.com"].slots == quantity("4")', d)
    assert run("device.allowMultipleAllocations", d)
    assert run("device.allowMultipleAllocations == false", dev("plain"))
    off = CELFeatures(consumable_capacity=False)
    assert outcome("device.allowMultipleAllocations == false", d, off)[1].startswith(
        "compilation failed: ERROR: <input>:1:8: undefined field 'allowMultipleAllocations'")


# -- quantities: exact encoding -------------------------------------------------------------------------

@pytest.mark.parametrize("expression", [
    'quantity("1Gi") == quantity("1024Mi")',
    'quantity("0.5") == quantity("500m")',
    'quantity("1k") == quantity("1000")',
    'quantity("1e3") == quantity("1k")',
    'quantity("200M").compareTo(quantity("0.2G")) == 0',
    'quantity("50M").compareTo(quantity("50Mi")) == -1',
    'quantity("50Mi").compareTo(quantity("50M")) == 1',
    'quantity("150Mi").isGreaterThan(quantity("100Mi"))',
    'quantity("50M").isLessThan(quantity("100M"))',
    '!quantity("1Gi").isLessThan(quantity("1024Mi"))',
    'quantity("1Gi") != quantity("1G")',
    'quantity("0.1").add(quantity("0.2")) == quantity("0.3")',
    'quantity("9223372036854775807").add(1).compareTo(quantity("9223372036854775807")) == 1',
    'quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")',
    'quantity("50k").sub(20000) == quantity("30k")',
    'quantity("50k").asInteger() == 50000',
    'quantity("50000000G").isInteger()',
    '!quantity("1.5").isInteger()',
    '!quantity("9999999999999999999999999999999999999G").isInteger()',
    'quantity("50k").sub(20000).asApproximateFloat() == 30000.0',
    'quantity("-5").sign() == -1 && quantity("0").sign() == 0 && quantity("3m").sign() == 1',
    'isQuantity("1.3Gi") && !isQuantity("1,3G") && !isQuantity("200K")',
    'device.capacity["gpu.example.com"].memory == quantity("81920Mi")',
])
def test_quantity_library(expression):
    assert run(expression) is True


def test_quantities_have_no_operators():
    assert outcome('quantity("1") < quantity("2")') == ("CELRuntimeError", "no such overload")
    assert outcome('quantity("1") + quantity("2") == quantity("3")') == ("CELRuntimeError", "no such overload")


def test_quantity_errors_carry_upstream_wording():
    assert outcome('quantity("1.5.5") == quantity("1")')[1] == \
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    assert outcome('quantity("9999999999999999999999999999999999999G").asInteger() > 0')[1] == \
        "cannot convert value to integer"


# -- semver ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("expression", [
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))',
    'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))',
    'semver("1.0.0-alpha.beta").isLessThan(semver("1.0.0-beta"))',
    'semver("1.0.0-beta").isLessThan(semver("1.0.0-beta.2"))',
    'semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
    'semver("1.0.0-beta.11").isLessThan(semver("1.0.0-rc.1"))',
    'semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
    'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
    'semver("1.2.3").compareTo(semver("2.0.0")) == -1',
    'semver("1.2.3").compareTo(semver("0.1.2")) == 1',
    'semver("1.0.0+build.1") == semver("1.0.0+build.2")',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    'isSemver("1.0.0") && !isSemver("v1.0") && isSemver("v1.0", true)',
    'semver("v1.02", true) == semver("1.2.0")',
    'device.attributes["gpu.example.com"].driverVersion == semver("1.0.0")',
])
def test_semver_library(expression):
    assert run(expression) is True


def test_semver_parse_errors_are_blangs():
    assert outcome('semver("01.0.0") == semver("1.0.0")')[1] == 'Major number must not contain leading zeroes "01"'
    assert outcome('semver("1.0") == semver("1.0.0")')[1] == "No Major.Minor.Patch elements found"


# -- cel.bind and optionals ------------------------------------------------------------------------------

def test_cel_bind():
    assert run('cel.bind(dra, device.attributes["gpu.example.com"], dra.index == 0 && dra.model.startsWith("LATEST"))')
    assert run('cel.bind(x, 2, cel.bind(y, x + 1, y == 3))')


def test_optional_chaining():
    assert run('device.attributes["gpu.example.com"].?missing.orValue("none") == "none"')
    assert run('device.attributes["gpu.example.com"][?"index"].orValue(7) == 0')
    assert run('!device.attributes["gpu.example.com"].?missing.hasValue()')


# -- list attributes (DRAListTypeAttributes) ----------------------------------------------------------------

LISTED = dev("d", tags=["fish", "bird"], ids=[1, 2], flags=[True, True], versions=[version("1.0.0"), version("2.0.0")],
             one=7)


@pytest.mark.parametrize("expression, expected", [
    ('device.attributes["gpu.example.com"].tags.includes("bird")', True),
    ('device.attributes["gpu.example.com"].tags.includes("cat")', False),
    ('device.attributes["gpu.example.com"].ids.includes(2)', True),
    ('device.attributes["gpu.example.com"].flags.includes(false)', False),
    ('device.attributes["gpu.example.com"].versions.includes(semver("2.0.0"))', True),
    ('device.attributes["gpu.example.com"].one.includes(7)', True),
    ('device.attributes["gpu.example.com"].ids.exists(i, i > 1)', True),
    ('"fish" in device.attributes["gpu.example.com"].tags', True),
])
def test_list_attributes_with_the_gate(expression, expected):
    assert run(expression, LISTED, LISTS) is expected


def test_list_attributes_without_the_gate():
    assert outcome('device.attributes["gpu.example.com"].one.includes(7)', LISTED)[1].startswith(
        "compilation failed: ERROR: <input>:1:42: undeclared reference to 'includes' (in container '')")
    # Any selector on such a device fails (upstream refuses to guess rather than mis-schedule).
    assert outcome("device.driver == 'gpu.example.com'", LISTED) == (
        "CELRuntimeError", "attribute tags: unsupported attribute value")


# -- errors -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, message", [
    ("?!", "compilation failed: ERROR: <input>:1:1: Syntax error: "),
    ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error: "),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ("device.driver", "must evaluate to bool or the unknown type, not string"),
    ('quantity("1Gi")', "must evaluate to bool or the unknown type, not kubernetes.Quantity"),
    ('device.attributes["gpu.example.com"]', "must evaluate to bool or the unknown type, not map(string, dyn)"),
    ("foo(1) == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n"
                    " | foo(1) == 1\n | ^"),
    ("nosuch == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nosuch' (in container '')"),
    ('device.driver.fooBar()', "compilation failed: ERROR: <input>:1:15: undeclared reference to 'fooBar'"),
    ("device.model == 'x'", "compilation failed: ERROR: <input>:1:8: undefined field 'model'"),
    ("device.driver == 1", "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to "
                           "'(string, int)'\n | device.driver == 1\n | ..............^"),
    ('["a"].exists(x, device.driver == 2)',
     "compilation failed: ERROR: <input>:1:31: found no matching overload for '_==_' applied to '(string, int)'"),
    ("device.driver != 'a' && true != 'x'",
     "compilation failed: ERROR: <input>:1:30: found no matching overload for '_!=_' applied to '(bool, string)'"),
    ("device.driver >= 2.5",
     "compilation failed: ERROR: <input>:1:15: found no matching overload for '_>=_' applied to '(string, double)'"),
    ('semver("1.0.0") == "1.0.0"',
     "compilation failed: ERROR: <input>:1:17: found no matching overload for '_==_' applied to "
     "'(kubernetes.Semver, string)'"),
])
def test_compile_errors(expression, message):
    selector = compile_selector(expression)
    assert selector.error is not None
    assert selector.error.expression == expression
    assert selector.error.message.startswith(message), selector.error.message


@pytest.mark.parametrize("expression", [
    "device.attributes['gpu.example.com'].index == 1",  # attribute values are typed at runtime
    "1 < 2.5",                                          # ordering compares numbers across types
    "cel.bind(d, device.driver, d == 'gpu.example.com')",
    "device.capacity['gpu.example.com'].memory.compareTo(quantity('1Gi')) >= 0",
    "device.driver == device.driver",
])
def test_comparisons_whose_types_may_match_compile(expression):
    assert compile_selector(expression).error is None


def test_syntax_error_shows_the_source_and_a_caret():
    message = compile_selector("device.driver ==").error.message
    assert message.split("\n")[1:] == [" | device.driver ==", " | ................^"]


def test_expression_length_limit():
    long_true = " && ".join(["true"] * 2100)
    assert len(long_true) > 10 * 1024
    assert compile_selector(long_true).error.message == \
        "compilation failed: expression too long: must have at most 10240 bytes"
    within = " && ".join(["true"] * 1200)
    assert compile_selector(within).error is None and compile_selector(within).matches(CELDevice(DRIVER, GPU))


@pytest.mark.parametrize("expression, message", [
    ('device.attributes["gpu.example.com"].model', "CEL result of type string could not be converted to bool"),
    ('device.attributes["gpu.example.com"].index', "CEL result of type int could not be converted to bool"),
    ('device.attributes["gpu.example.com"].nosuch == 1', "no such key: nosuch"),
    ('device.attributes["gpu.example.com"].index / 0 == 1', "division by zero"),
    ('semver("x") == semver("1.0.0")', "No Major.Minor.Patch elements found"),
    ('device.attributes["gpu.example.com"].model.isGreaterThan(semver("1.0.0"))', "no such overload"),
])
def test_runtime_errors(expression, message):
    with pytest.raises(CELRuntimeError) as err:
        run(expression)
    assert err.value.message == message
    assert err.value.expression == expression


def test_cost_limit_is_enforced_on_the_worst_case_estimate():
    ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    nested = "true"
    for var in ("a", "b", "c", "d", "e", "f", "g"):
        nested = f"{ten}.all({var}, {nested})"
    selector = compile_selector(nested)
    assert selector.max_cost > COST_LIMIT
    assert outcome(nested) == ("CELRuntimeError", "operation cancelled: actual cost limit exceeded")
    cheap = compile_selector(f"{ten}.all(a, {ten}.all(b, a + b > 1))")
    assert cheap.max_cost < COST_LIMIT and cheap.matches(CELDevice(DRIVER, GPU))


def test_logical_operators_absorb_errors_like_cel():
    assert run('device.attributes["gpu.example.com"].nosuch == 1 || true') is True
    assert run('false && device.attributes["gpu.example.com"].nosuch == 1') is False
    assert run('device.attributes["gpu.example.com"].nosuch == 1 && false') is False
    with pytest.raises(CELRuntimeError, match="no such key: nosuch"):
        run('device.attributes["gpu.example.com"].nosuch == 1 || false')


# The direct (Python) evaluator and the CEL library must agree on everything the direct one handles.
DIFFERENTIAL = [
    "device.driver == 'gpu.example.com'",
    "'gpu.example.com' == device.driver",
    "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL' && device.attributes['gpu.example.com'].index >= 0",
    "device.attributes['gpu.example.com'].index == 0.0",
    "device.attributes['gpu.example.com'].index == 'zero'",
    "device.attributes['gpu.example.com'].index < 1.5",
    "device.attributes['gpu.example.com'].model > 'A'",
    "has(device.attributes['gpu.example.com'].model) && !has(device.attributes['gpu.example.com'].nope)",
    "'model' in device.attributes['gpu.example.com'] ? device.attributes['gpu.example.com'].model == 'x' : true",
    "device.attributes['gpu.example.com'].nope == 1 || device.driver == 'gpu.example.com'",
    "device.attributes['gpu.example.com'].nope == 1 || device.driver == 'x'",
    "device.attributes['gpu.example.com'].nope == 1 && device.driver == 'x'",
    "device.attributes['gpu.example.com'].model.endsWith('MODEL') || device.attributes['gpu.example.com'].model.contains('GPU')",
    "size(device.attributes['gpu.example.com']) == 4",
    "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('79Gi')) && device.capacity['gpu.example.com'].compute.asInteger() == 100",
    "device.capacity['gpu.example.com'].memory.compareTo(quantity('1.5Gi')) == 1",
    "device.capacity['gpu.example.com'].memory.compareTo(quantity('bad')) == 1",
    "device.capacity['gpu.example.com'].nope.compareTo(quantity('1')) == 1",
    "device.attributes['gpu.example.com'].driverVersion.isLessThan(semver('1.0.1')) && device.attributes['gpu.example.com'].driverVersion.minor() == 0",
    "device.attributes['gpu.example.com'].model",
    "device.attributes['gpu.example.com'].model == 1 || true",
    "!device.allowMultipleAllocations",
    "device.attributes['other.com'].x == 1",
    "'other.com' in device.attributes || 'gpu.example.com' in device.attributes",
    "isSemver('1.0.0') && isQuantity('1Gi') && semver('1.2.3').patch() == 3",
]


@pytest.mark.parametrize("expression", DIFFERENTIAL)
def test_direct_evaluator_agrees_with_the_cel_library(expression):
    assert compile_selector(expression).direct is not None or "model ==" in expression
    assert outcome(expression, direct=True) == outcome(expression, direct=False)


# -- caching, gates, validation hook, logging ------------------------------------------------------------------

def test_selector_cache_compiles_once_per_expression_and_features():
    cache = SelectorCache()
    first = cache.get("device.driver == 'a'")
    assert cache.get("device.driver == 'a'") is first
    assert cache.get("device.driver == 'a'", LISTS) is not first
    assert cache.compiles == 2
    assert cache.get("1 +").error is not None and cache.get("1 +") is cache.get("1 +")


def test_device_context_is_built_once_per_field_set():
    device = CELDevice(DRIVER, GPU)
    a = compile_selector("device.attributes['gpu.example.com'].index == 0", direct=False)
    b = compile_selector("device.attributes['gpu.example.com'].model != ''", direct=False)
    assert a.matches(device) and b.matches(device)
    assert device.context(a.fields) is device.context(b.fields)


def test_features_from_gates():
    assert CELFeatures.from_gates(FeatureGates()) == CELFeatures(consumable_capacity=True, list_type_attributes=False)
    assert CELFeatures.from_gates(FeatureGates({"DRAListTypeAttributes": True})).list_type_attributes
    assert CELFeatures.from_gates({"DRAConsumableCapacity": False}) == CELFeatures(False, False)


def test_validation_hook():
    assert check_expression("device.driver == 'x'") is None
    assert check_expression("   ") == ("Required", "")
    kind, detail = check_expression("device.driver ==")
    assert kind == "Invalid" and detail.startswith("compilation failed: ERROR: <input>:1:17: Syntax error")
    ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    expensive = f"{ten}.all(a, {ten}.all(b, {ten}.all(c, {ten}.all(d, {ten}.all(e, {ten}.all(f, a < b))))))"
    assert check_expression(expensive) == ("Forbidden", "too complex, exceeds cost limit")


def test_failing_library_functions_do_not_log_warnings(caplog):
    with caplog.at_level(logging.WARNING):
        outcome('quantity("nope") == quantity("1")', direct=False)
    assert not [r for r in caplog.records if r.name == "cel"]


def test_admission_rejects_bad_selectors():
    from phalanx.api.resource import claim_validation as resource_api
    assert resource_api.validate_cel_expression("device.driver == 'x'", "spec.selectors[0].cel.expression", False) == []
    errs = resource_api.validate_cel_expression("device.drivr == 'x'", "spec.selectors[0].cel.expression", False)
    assert len(errs) == 1 and "undefined field 'drivr'" in str(errs[0])
