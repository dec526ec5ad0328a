"""An HTTP load generator for measuring servers as the SEDA thesis did (6.1.3-6.1.4).

    from benchmarks.loadgen import closed_loop, specweb99
    report = closed_loop("http://127.0.0.1:8000/", clients=1024, duration=30,
                         workload=specweb99(root="/tmp/specweb"))
    print(report.summary())
"""

from .client import closed_loop, open_loop
from .report import Errors, Report, jain
from .workloads import (
    Workload,
    fixed,
    make_fileset,
    make_webstone_fileset,
    specweb99,
    webstone,
)

__all__ = ["Errors", "Report", "Workload", "closed_loop", "fixed", "jain", "make_fileset",
           "make_webstone_fileset", "open_loop", "specweb99", "webstone"]
