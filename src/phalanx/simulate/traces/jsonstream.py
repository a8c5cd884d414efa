"""The elements of a file's top-level JSON array, one at a time, without loading the file.

Philly's `cluster_job_log` is one JSON array of every job; `json.load` would hold all of it (and
its Python objects, several times the file's size) in memory. This reads the file in chunks and
decodes one element at a time with the standard library's C decoder (`JSONDecoder.raw_decode`),
so memory holds one chunk and one element:

    with open(path, encoding="utf-8") as stream:
        for index, line, element in iter_array(stream, path):
            ...

`line` is the line where the element starts, for error messages. A file that is not a JSON array
(or an element that is not valid JSON) raises `TraceError` naming the file, line and element: past
a syntax error nothing can be read reliably, so this stops the read whatever `strict` says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from phalanx.simulate.traces.reading import TraceError

CHUNK_CHARS = 1 << 20
MAX_ELEMENT_CHARS = 64 << 20  # an element this large is either broken JSON or not a job record
_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = "0123456789.eE+-"


class _Buffer:
    """The unread text of the stream, with the line number of any position in it."""

    def __init__(self, stream: TextIO, path: str, chunk_chars: int) -> None:
        self.stream = stream
        self.path = path
        self.chunk_chars = chunk_chars
        self.text = ""
        self.pos = 0
        self.eof = False
        self._line = 1  # the line of self.text[self._line_pos]
        self._line_pos = 0

    def more(self) -> bool:
        """Read another chunk, dropping what was consumed; False at the end of the stream."""
        if self.eof:
            return False
        self.line()  # count the consumed part before dropping it
        self.text = self.text[self.pos:]
        self._line_pos -= self.pos
        self.pos = 0
        try:
            chunk = self.stream.read(self.chunk_chars)
        except UnicodeDecodeError as error:
            raise TraceError(self.path, f"after line {self.line()}", "(file)", f"not UTF-8 text: {error}") from None
        if not chunk:
            self.eof = True
            return False
        self.text += chunk
        return True

    def skip_whitespace(self) -> str:
        """The next character that is not whitespace ("" at the end), consuming the whitespace."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def line(self) -> int:
        self._line += self.text.count("\n", self._line_pos, self.pos)
        self._line_pos = self.pos
        return self._line


def iter_array(stream: TextIO, path: str, *, chunk_chars: int = CHUNK_CHARS) -> Iterator[tuple[int, int, Any]]:
    """(index, line, element) for each element of the JSON array that `stream` holds."""
    buffer = _Buffer(stream, path, chunk_chars)
    decoder = json.JSONDecoder()
    if buffer.skip_whitespace() != "[":
        raise TraceError(path, f"line {buffer.line()}", "(file)", "must be a JSON array of jobs")
    buffer.pos += 1
    index = 0
    while True:
        char = buffer.skip_whitespace()
        if char == "]":
            break
        if index > 0:
            if char != ",":
                raise TraceError(path, f"line {buffer.line()}", f"[{index}]",
                                 f"expected ',' or ']' after element {index - 1}, found {char!r}")
            buffer.pos += 1
            buffer.skip_whitespace()
        line = buffer.line()
        yield index, line, _decode_element(buffer, decoder, path, index, line)
        index += 1
    buffer.pos += 1
    if buffer.skip_whitespace():
        raise TraceError(path, f"line {buffer.line()}", "(file)", "unexpected text after the JSON array")


def _decode_element(buffer: _Buffer, decoder: json.JSONDecoder, path: str, index: int, line: int) -> Any:
    """Decode the element at the buffer's position, reading more while it is incomplete."""
    while True:
        try:
            element, end = decoder.raw_decode(buffer.text, buffer.pos)
        except json.JSONDecodeError as error:
            if len(buffer.text) - buffer.pos > MAX_ELEMENT_CHARS or not buffer.more():
                error_line = line + buffer.text.count("\n", buffer.pos, error.pos)
                raise TraceError(path, f"line {line}", f"[{index}]",
                                 f"not valid JSON: {error.msg} (line {error_line})") from None
            continue
        # A number may go on in the next chunk ("-500" of "-500.0"): read on when it touches the end.
        number = isinstance(element, int | float) and not isinstance(element, bool)
        touches_end = end == len(buffer.text) or buffer.text[end] in _NUMBER_CHARS
        if number and touches_end and end - buffer.pos <= MAX_ELEMENT_CHARS and buffer.more():
            continue
        buffer.pos = end
        return element
