"""What every tool that writes one named file (Write, Edit, NotebookEdit) says the same way: the path it writes
for the permission step, that path made absolute in what hooks see, where the editor shows the call, and the
input's own problems, found before anything on disk is looked at."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from bridge.tools.base import In, Location, Tool, ToolContext, ToolError
from bridge.tools.fileio import backfill_path, written_path
from bridge.tools.paths import absolute_path, path_locations


class WritesAFile(Tool[In]):
    path_field: ClassVar[str] = "file_path"  # the input field that names the file

    def written(self, data: In) -> str:
        return str(getattr(data, self.path_field))

    def checked_path(self, data: In) -> Path:
        """The file, absolute; a ToolError for what is wrong with the input alone (tools add their own checks)."""
        return absolute_path(self.written(data), field=self.path_field)

    async def validate_input(self, data: In, ctx: ToolContext) -> str | None:
        try:
            self.checked_path(data)
        except ToolError as error:
            return str(error)
        return None

    def permission_paths(self, data: In, ctx: ToolContext) -> list[tuple[Path, Literal["read", "write"]]]:
        return written_path(self.written(data), field=self.path_field)

    def backfill_observable_input(self, raw: dict[str, Any]) -> dict[str, Any]:
        return backfill_path(raw, self.path_field)

    def locations(self, data: In) -> list[Location]:
        """The file, without a line: a line would mean reading the file before the permission step allowed it
        (and a FIFO named there would block the read)."""
        return path_locations(self.written(data), field=self.path_field)

    def user_facing_title(self, data: In) -> str:
        return f"{self.name} {self.written(data)}"
