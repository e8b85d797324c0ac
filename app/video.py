"""Frames into an MP4 video (H.264, the format slides and browsers play), written by ffmpeg: the
one imageio-ffmpeg ships (``pip install 'specscope[video]'``), else one on the PATH. Qt itself
writes no video without its multimedia add-on; ffmpeg is the well-kept encoder."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .gif import rgb_bytes

FPS = 25                       # the output's frame rate: each round's frame is repeated to its pace
NO_FFMPEG = ("writing an MP4 needs ffmpeg: pip install 'specscope[video]' (imageio-ffmpeg, which "
             "brings its own), or put ffmpeg on the PATH")


def ffmpeg_exe() -> str | None:
    """imageio-ffmpeg's ffmpeg (it also honours IMAGEIO_FFMPEG_EXE), else ``ffmpeg`` on the PATH."""
    try:
        import imageio_ffmpeg
        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return shutil.which("ffmpeg")


def write_mp4(images, path: Path, pace_ms: int) -> int:
    """The frames as an H.264 MP4, each shown ``pace_ms``; how many frames were written.
    ValueError: no ffmpeg, or ffmpeg refused (its last words)."""
    images = list(images)
    if not images:
        return 0
    exe = ffmpeg_exe()
    if exe is None:
        raise ValueError(NO_FFMPEG)
    w, h = images[0].width(), images[0].height()
    cmd = [exe, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
           "-framerate", f"{1000.0 / pace_ms:.6f}", "-i", "-",
           # yuv420p (what every player takes) needs even sides
           "-vf", f"pad=ceil(iw/2)*2:ceil(ih/2)*2:color=white,fps={FPS}",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(path)]
    if pace_ms <= 0:
        raise ValueError(f"a frame's pace must be above 0 ms, not {pace_ms}")
    with tempfile.TemporaryFile() as log:      # (a pipe could fill while we write the frames)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=log)
        try:
            for img in images:
                proc.stdin.write(rgb_bytes(img))
        except OSError:                        # ffmpeg gave up: its log says why
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
        code = proc.wait()
        log.seek(0)
        err = log.read().decode(errors="replace")
    if code:
        raise ValueError(f"ffmpeg could not write {path}: {err.strip()[-300:] or f'exit {code}'}")
    return len(images)


__all__ = ["FPS", "NO_FFMPEG", "ffmpeg_exe", "write_mp4"]
