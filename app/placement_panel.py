"""Where each model computes: the devices llama.cpp sees, rpc-server endpoints, per-model
devices (the Advanced section of the pair panel; core/models/devices.py does the work).

llama.cpp is asked off the UI thread (an endpoint may take seconds to answer); what it says
comes back through a queued signal. Without RPC in the loaded llama.cpp the endpoint field
is greyed out with the reason and the install step.
"""

from __future__ import annotations

import html
import threading

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QComboBox, QGridLayout, QHBoxLayout, QLabel, QLineEdit,
                               QPushButton, QSizePolicy, QWidget)

DEFAULT, LOCAL = "default", "none (local CPU)"
SECURITY = ("⚠ rpc-server has no authentication or encryption: anyone who reaches its port can "
            "use it. Never expose it on an open network (trusted LAN or SSH tunnel only).")


class PlacementBox(QWidget):
    """RPC endpoints, each model's devices and the list of devices llama.cpp sees."""

    answered = Signal(object)        # (rpc supported?, reason, devices, error) from the thread

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QGridLayout(self)
        lay.setContentsMargins(0, 4, 0, 0)
        self.rpc_edit = QLineEdit()
        self.rpc_edit.setPlaceholderText("HOST:PORT, … of llama.cpp rpc-server")
        self.rpc_edit.setToolTip("llama.cpp's --rpc: rpc-server endpoints, registered as devices "
                                 "RPC0, RPC1 … \n" + SECURITY)
        self.connect_button = QPushButton("Connect")
        self.connect_button.setToolTip("greet the endpoints and list their devices")
        row = QHBoxLayout()
        row.addWidget(self.rpc_edit, 1)
        row.addWidget(self.connect_button)
        lay.addWidget(QLabel("RPC servers"), 0, 0)
        lay.addLayout(row, 0, 1, 1, 2)
        self.warning = QLabel(SECURITY)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("color:#9a5b00")
        self.warning.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.warning, 1, 0, 1, 3)
        self.devices = {r: QComboBox() for r in ("target", "draft")}
        for c, role in enumerate(("target", "draft"), start=1):
            self.devices[role].addItems([DEFAULT, LOCAL])
            self.devices[role].setToolTip(f"devices for the {role}'s offloaded layers (--device"
                                          f"{'' if role == 'target' else '-draft'}); default: "
                                          "llama.cpp's choice (RPC devices first, then GPUs)")
            lay.addWidget(self.devices[role], 2, c)
        lay.addWidget(QLabel("devices"), 2, 0)
        self.table = QLabel("devices: not asked yet")
        self.table.setWordWrap(True)
        self.table.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.table, 3, 0, 1, 3)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setVisible(False)
        lay.addWidget(self.status, 4, 0, 1, 3)
        self.connect_button.clicked.connect(self.refresh)
        self.answered.connect(self._show)
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ settings
    def endpoints(self) -> tuple[str, ...]:
        from specscope.core.models.devices import parse_endpoints
        from specscope.core.errors import ConfigError
        try:
            return parse_endpoints(self.rpc_edit.text())
        except ConfigError:
            return ()       # the load reports it: refresh() shows it here too

    def engine_kwargs(self) -> dict:
        kw: dict = {"rpc": self.endpoints()}
        for role, box in self.devices.items():
            text = box.currentText()
            kw[f"{role}_devices"] = None if text == DEFAULT else () if text == LOCAL else (text,)
        return kw

    def set_engine_kwargs(self, kw: dict) -> None:
        self.rpc_edit.setText(", ".join(kw.get("rpc") or ()))
        for role, box in self.devices.items():
            names = kw.get(f"{role}_devices")
            want = DEFAULT if names is None else LOCAL if not names else names[0]
            box.blockSignals(True)          # a saved choice keeps its saved layer count
            if box.findText(want) < 0:
                box.addItem(want)
            box.setCurrentText(want)
            box.blockSignals(False)

    # ------------------------------------------------------------------ llama.cpp
    def refresh(self) -> None:
        """Ask llama.cpp (in a thread) whether it has RPC, register the endpoints, list devices."""
        if self._thread is not None and self._thread.is_alive():
            return
        text = self.rpc_edit.text()
        self.connect_button.setEnabled(False)
        self.table.setText("devices: asking llama.cpp…")

        def ask():
            from specscope.core.models import devices as d
            from specscope.core.errors import SpecScopeError
            supported, error, found = False, "", []
            try:
                supported = d.rpc_supported()
                endpoints = d.parse_endpoints(text)
                if endpoints:
                    d.add_rpc_servers(endpoints)
            except SpecScopeError as exc:
                error = str(exc)
            try:
                found = d.list_devices()
            except Exception as exc:       # never let the thread die silently
                error = error or f"listing llama.cpp's devices failed: {exc}"
            self.answered.emit((supported, d.NO_RPC_REASON, found, error))
        self._thread = threading.Thread(target=ask, name="placement-devices", daemon=True)
        self._thread.start()

    def _show(self, answer) -> None:
        supported, reason, found, error = answer
        self.connect_button.setEnabled(supported)
        self.rpc_edit.setEnabled(supported)
        if not supported:
            self.rpc_edit.setToolTip(reason)
            self.connect_button.setToolTip(reason)
        self.status.setVisible(bool(error) or not supported)
        self.status.setStyleSheet("color:#b00020" if error else "color:#555")
        self.status.setText(error or f"RPC unavailable: {reason}")
        rows = "".join(
            f"<tr><td><b>{html.escape(dv.name)}</b></td><td>{html.escape(dv.type)}</td>"
            f"<td align='right'>{dv.free >> 20} / {dv.total >> 20} MiB</td>"
            f"<td>{html.escape(dv.description)}</td></tr>" for dv in found)
        self.table.setText("<table cellspacing='0' cellpadding='3'><tr><th align='left'>device"
                           "</th><th align='left'>type</th><th>free / total</th>"
                           f"<th align='left'>description</th></tr>{rows}</table>")
        names = [dv.name for dv in found if dv.type != "CPU"]
        for role, box in self.devices.items():
            current = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems([DEFAULT, LOCAL, *names])
            box.setCurrentText(current if box.findText(current) >= 0 else DEFAULT)
            box.blockSignals(False)
