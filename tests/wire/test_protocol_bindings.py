"""The Java and JavaScript bindings' constants are PROTOCOL.md's: message type codes (§3), the
registered extensions with their message and reserved types (§4.4), and the default limits
(§11). Read from their sources, so that a binding cannot drift from the document unnoticed.

(The codecs themselves are checked against docs/protocol-vectors.json by each binding's own
suite: java/.../ProtocolVectorsTest.java and js/test/wire.test.mjs.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "PROTOCOL.md").read_text()
JS_WIRE = (ROOT / "js" / "src" / "rsio-wire.js").read_text()
JAVA_TYPES = (
    ROOT / "java" / "src" / "main" / "java" / "io" / "rstreams" / "wire" / "FrameType.java"
).read_text()
JAVA_LIMITS = (
    ROOT / "java" / "src" / "main" / "java" / "io" / "rstreams" / "wire" / "Limits.java"
).read_text()


def _types_table() -> dict[str, int]:
    """§3's table: message name -> type code (the named rows only)."""
    block = PROTOCOL.split("<!-- generated:types -->")[1].split("<!-- /generated:types -->")[0]
    found = {}
    for line in block.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        code = re.fullmatch(r"`0x([0-9A-F]{2})`", cells[0])
        if code and not cells[1].startswith("*"):
            found[cells[1].split(" (")[0]] = int(code.group(1), 16)
    return found


TYPES = _types_table()
CORE = {name: code for name, code in TYPES.items() if code < 0x80}


def _span(text: str) -> set[int]:
    found: set[int] = set()
    for first, last in re.findall(r"`0x([0-9A-F]{2})`(?:\u2013`0x([0-9A-F]{2})`)?", text):
        found |= set(range(int(first, 16), int(last or first, 16) + 1))
    return found


def _extensions() -> dict[int, tuple[str, set[int], set[int], str]]:
    """§4.4's table: id -> (name, defined types, reserved types, section)."""
    table = PROTOCOL.split("Registered extensions:")[1].split("\n\n")[1]
    found = {}
    for line in table.splitlines()[2:]:
        ident, name, types, section = (cell.strip() for cell in line.strip().strip("|").split("|"))
        reserved = set().union(*(_span(part) for part in re.findall(r"\(([^)]*reserved[^)]*)\)", types)))
        found[int(ident)] = (name, _span(types) - reserved, reserved, section)
    return found


EXTENSIONS = _extensions()


def _limits() -> dict[str, int]:
    """§11's table: setting -> default, in bytes or a count."""
    table = PROTOCOL.split("## 11. Limits")[1].split("\n\n")[2]
    units = {"KiB": 1024, "MiB": 1024 * 1024}
    found = {}
    for line in table.splitlines()[2:]:
        setting, default = (cell.strip() for cell in line.strip().strip("|").split("|")[:2])
        named = re.match(r"`(\w+)`", setting)
        value = re.match(r"(\d+)(?: (KiB|MiB)\b)?", default)
        if named and value:
            found[named.group(1)] = int(value.group(1)) * units.get(value.group(2) or "", 1)
    return found


CORE_LIMITS = {
    "max_element_size",
    "max_string_length",
    "max_name_length",
    "max_subscriptions",
    "max_parts_in_flight",
    "max_reassembly_bytes",
    "max_extensions",
    "split_threshold",
}
"""§11's limits of the core protocol, which every binding has (the others are extensions')."""


def _camel(snake: str) -> str:
    head, *rest = snake.lower().split("_")
    return head + "".join(word.capitalize() for word in rest)


def _js_object(name: str) -> str:
    match = re.search(rf"export const {name} = Object\.freeze\(\{{(.*?)\n\}}\);", JS_WIRE, re.DOTALL)
    assert match, f"js/src/rsio-wire.js: no {name}"
    return match.group(1)


# -- JavaScript ------------------------------------------------------------------------------------
def test_js_core_codes_are_the_table_s() -> None:
    codes = {name: int(code, 16) for name, code in re.findall(r"(\w+): 0x([0-9a-f]{2})", _js_object("CODES"))}
    assert codes == CORE


def test_js_extensions_are_the_registry_s() -> None:
    body = _js_object("EXTENSIONS")
    entries = re.findall(
        r"(\w+): Object\.freeze\(\{ id: (\d+), section: \"(§[\d.]+)\", types: Object\.freeze\(\{(.*?)\}\),"
        r"\s*reserved: Object\.freeze\(\[(.*?)\]\)",
        body,
        re.DOTALL,
    )
    assert {int(ident) for _, ident, *_ in entries} == set(EXTENSIONS)
    for key, ident, section, types, reserved in entries:
        name, defined, reserved_types, doc_section = EXTENSIONS[int(ident)]
        assert _camel(name.replace("-", "_")) == key, (ident, key, name)
        assert section == doc_section, (name, section, doc_section)
        named = {n: int(c, 16) for n, c in re.findall(r"(\w+): 0x([0-9a-f]{2})", types)}
        assert set(named.values()) == defined, (name, named)
        assert all(TYPES[n] == c for n, c in named.items()), (name, named)
        assert {int(c, 16) for c in re.findall(r"0x([0-9a-f]{2})", reserved)} == reserved_types, name


def test_js_default_limits_are_section_11_s() -> None:
    body = _js_object("DEFAULT_LIMITS")
    sizes = {"": 1, " * 1024": 1024, " * 1024 * 1024": 1024 * 1024}
    stated = {
        key: int(number) * sizes[unit]
        for key, number, unit in re.findall(r"(\w+): (\d+)((?: \* 1024)*),", body)
    }
    for setting, default in _limits().items():
        key = _camel(setting)
        if key in stated or setting in CORE_LIMITS:  # an extension's limit may live with the extension
            assert stated.get(key) == default, (
                f"js DEFAULT_LIMITS.{key} = {stated.get(key)}, §11 says {default}"
            )
    assert {_camel(s) for s in CORE_LIMITS} <= set(stated)


# -- Java --------------------------------------------------------------------------------------------
def _java_ints() -> dict[str, int]:
    return {
        name: int(value, 0)
        for name, value in re.findall(r"static final (?:int|long) (\w+) = (\w+);", JAVA_TYPES)
    }


def test_java_core_codes_are_the_table_s() -> None:
    ints = _java_ints()
    java = {_camel(name): value for name, value in ints.items() if value and name != "FIRST_EXTENSION"}
    for name, code in CORE.items():
        assert java.get(name) == code, f"FrameType for {name}: {java.get(name)}, §3 says 0x{code:02X}"
    assert ints["FIRST_EXTENSION"] == 0x80


def test_java_extension_types_and_ids_are_the_registry_s() -> None:
    ints = _java_ints()
    for name, code in TYPES.items():
        if code >= 0x80 and _camel_to_const(name) in ints:
            assert ints[_camel_to_const(name)] == code, name
    by_name = {name: ident for ident, (name, *_) in EXTENSIONS.items()}
    ids = {"KEEPALIVE", "AUTH", "RESUME_EXTENSION", "CONTENT_TYPES", "METADATA", "ERROR_CODES", "MESSAGES"}
    for const in [*ids, "CHANNELS"]:
        name = const.removesuffix("_EXTENSION").lower().replace("_", "-")
        assert ints[const] == by_name[name], const


def test_java_owned_ranges_are_the_registry_s() -> None:
    """FrameType.owner's ranges: each extension's types, defined and reserved; the binding does
    not know input-parts (id 9), so, like a peer of channels from before it, it counts 0xA6 as
    channels' (§21.6)."""
    ints = _java_ints()
    ranges = re.findall(
        r"type (?:== (0x\w+) \|\| type == (0x\w+)|>= (0x\w+) && type <= (0x\w+))\) \{\s*return (\w+);",
        JAVA_TYPES,
    )
    assert len(ranges) == 8
    for eq1, eq2, low, high, const in ranges:
        owned = {int(eq1, 16), int(eq2, 16)} if eq1 else set(range(int(low, 16), int(high, 16) + 1))
        _, defined, reserved, _ = EXTENSIONS[ints[const]]
        expected = defined | reserved | (EXTENSIONS[9][1] if ints[const] == 8 else set())
        assert owned == expected, const


def test_java_default_limits_are_section_11_s() -> None:
    fields = re.search(r"public record Limits\((.*?)\)", JAVA_LIMITS, re.DOTALL)
    default = re.search(r"DEFAULT =\s*new Limits\((.*?)\);", JAVA_LIMITS, re.DOTALL)
    assert fields and default
    names = re.findall(r"(?:int|long) (\w+)", fields.group(1))
    values = [
        eval(v.strip().rstrip("L").replace("L <<", " <<"), {"__builtins__": {}})
        for v in default.group(1).split(",")
    ]
    stated = dict(zip(names, values, strict=True))
    for setting, value in _limits().items():
        key = _camel(setting)
        if key in stated:
            assert stated[key] == value, f"Limits.DEFAULT.{key} = {stated[key]}, §11 says {value}"
    assert {_camel(s) for s in CORE_LIMITS} <= set(stated)


def _camel_to_const(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).upper()


# -- the error-code registry (§19.2) ------------------------------------------------------------------
def _registry() -> dict[int, str]:
    """§19.2's table: code -> name, as a constant (``unknown publisher`` -> ``UNKNOWN_PUBLISHER``)."""
    table = PROTOCOL.split("### 19.2")[1].split("\n\n")[2]
    found = {}
    for line in table.splitlines()[2:]:
        code, name = (cell.strip() for cell in line.strip().strip("|").split("|")[:2])
        found[int(code)] = name.upper().replace(" ", "_")
    return found


def test_python_error_codes_are_the_registry() -> None:
    from rstreams.wire import ErrorCode

    assert {code.value: code.name for code in ErrorCode} == _registry()


def test_js_error_codes_are_the_registry() -> None:
    source = (ROOT / "js" / "src" / "rsio-codes.js").read_text()
    body = re.search(r"export const ERROR_CODES = Object\.freeze\(\{(.*?)\}\);", source, re.DOTALL)
    assert body
    assert {int(code): name for name, code in re.findall(r"(\w+): (\d+),", body.group(1))} == _registry()


def test_the_typed_remote_errors_of_19_3_have_their_codes() -> None:
    """§19.3 lists each class with its code: ``UnknownPublisher`` (2), ..."""
    import rstreams.net

    text = PROTOCOL.split("### 19.3")[1].split("\n## ")[0]
    listed = re.findall(r"`(\w+)` \((\d+)\)", text)
    assert len(listed) == 10
    for name, code in listed:
        assert int(code) == getattr(rstreams.net, name).CODE, name
