"""The web-server study of the thesis (6.1.3-6.1.4, Fig. 37-40): Haboob beside the baseline
designs (``benchmarks.baselines``) and real servers, 1 to 1024 closed-loop clients over a
SPECweb99 file set; throughput, fairness and response-time distributions.

    python -m benchmarks.webstudy --servers haboob,sped,nginx --clients 1,4,16,64,256,1024 \
        --duration 30

Writes webstudy.md (tables), webstudy.json (raw results) and webstudy_*.png to ``--out``
(docs/results by default).
"""
