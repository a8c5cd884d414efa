"""CEL for DRA device selectors: Kubernetes' `device` environment over the Rust `cel` library.

Selectors (`DeviceClass.spec.selectors[].cel.expression`, `requests[].exactly.selectors[]`) are
compiled once and evaluated once per device; both results are cached by the callers:

    features = CELFeatures.from_gates(gates)
    selector = SELECTORS.get("device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'", features)
    if selector.error:                       # CELCompileError: upstream's `compilation failed: ...`
        ...
    device = CELDevice("gpu.example.com", slice_device_dict, features)   # converted once per device
    selector.matches(device)                 # True/False, or raises CELRuntimeError

The `device` variable is upstream's `kubernetes.DRADevice`: `driver`, `attributes` (domain -> name
-> value; names without a domain live under the driver's name), `capacity` (domain -> name ->
quantity) and, with DRAConsumableCapacity, `allowMultipleAllocations`. An unknown domain reads as
an empty map; an unknown name fails with `no such key: <name>`. Available functions: the CEL
standard library, `quantity()`/`isQuantity()` with `compareTo`, `isGreaterThan`, `isLessThan`,
`add`, `sub`, `asInteger`, `asApproximateFloat`, `isInteger`, `sign`; `semver()`/`isSemver()`
(optionally normalizing) with `compareTo`, `isGreaterThan`, `isLessThan`, `major`, `minor`,
`patch`; `cel.bind`; optional values (`x.?f`, `m[?k]`, `optional.of/none`, `orValue`,
`hasValue`, `value`); Kubernetes' list library (`sum`, `min`, `max`, `isSorted`, `indexOf`,
`lastIndexOf`), regex `find`/`findAll`, the strings extension (`charAt`, `indexOf`,
`lowerAscii`, `replace`, `split`, `substring`, `trim`, `upperAscii`, `join`), `sets.*`; and
`includes` (scalar or list attribute) when DRAListTypeAttributes is on, which also exposes list
attributes (`ints`, `bools`, `strings`, `versions`) as CEL lists.

How it is built on a library that cannot carry opaque Python objects:
- Encoding. A quantity is the map `{"\\ue000quantity": "<numerator>/<denominator>"}` of its exact
  value (a normalized fraction), a semver the map `{"\\ue000semver": "<major.minor.patch[-pre]>"}`
  (build metadata dropped: it never takes part in precedence). Equal values therefore have equal
  encodings, so `==` is exact (`quantity("1Gi") == quantity("1024Mi")`, `quantity("0.5") ==
  quantity("500m")`), while `<`, `+` and `string()` on them fail at runtime as they fail
  (at compile time) upstream. Comparisons go through `compareTo` & co., which decode the maps.
- Rewriting. Expressions are parsed by a small CEL parser of our own and printed back with three
  rewrites the Rust library needs: `cel.bind(x, init, body)` -> `[init].map(x, body)[0]`;
  `a.?f` / `m[?k]` -> a conditional over `has()` / `in` and `optional.of/none`; and
  `device.attributes[d]` / `device.capacity[d]` -> `(d in ... ? ...[d] : {})` (unknown domain ->
  empty map). The same parse gives compile-time checks upstream does with its type checker:
  undeclared identifiers and functions (`undeclared reference to 'x' (in container '')`),
  unknown `device` fields (`undefined field 'x'`), comparisons of operands whose types are known
  and differ (`found no matching overload for '_==_' applied to '(string, int)'`; ordering compares
  numbers across int, uint and double), and a result whose type is known not to be bool (`must evaluate to bool or the unknown type, not int`). A result that turns out not to be
  a bool at runtime fails with `CEL result of type string could not be converted to bool`.
- Limits. Expressions longer than 10 Ki characters do not compile. The cost limit (upstream:
  1,000,000 per evaluation) is enforced as a worst-case static estimate: comprehensions multiply
  their body cost by the size of their range (list literal length, 32 for attribute/capacity maps,
  48 otherwise); a selector whose estimate exceeds the limit fails each evaluation with upstream's
  `operation cancelled: actual cost limit exceeded`, since the Rust evaluator cannot be stopped
  half-way. `CompiledSelector.max_cost` exposes the estimate.
- Speed. A device's CEL context is built once per device and per set of `device` fields a selector
  reads (`device.driver == "x"` needs only the driver), and `device.driver == "<literal>"` is
  answered without CEL at all.

Errors are the user's. `CELCompileError` / `CELRuntimeError` carry the expression and upstream's
message (`compilation failed: ERROR: <input>:1:4: Syntax error: ...`, `no such key: model`); the
allocator wraps them into `class gpu: selector #0 on device ...: CEL runtime error: ...`.
`validation.check_expression()` is what the API server calls at admission (`phalanx.api.resource`
imports it; nothing here imports the API).

Modules, by role: `environment` (features, limits, errors), `values` (encoding), `library`
(functions), `syntax` (tokenizer, parser, printer), `rewrite`, `checker` (names, comparisons, static
types), `cost`, `analysis` (fields read, driver literal), `direct` (the Python evaluator),
`compiler` (compile, cache, evaluate), `device` (`CELDevice`), `validation` (admission).
"""
