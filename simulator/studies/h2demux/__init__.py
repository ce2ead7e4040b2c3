"""HTTP/2 receive-side demultiplexing (``studies/demux.py``): a real h2 server's byte
stream (``server``), four receiver strategies on the frame scanner (``receivers``),
measured on a real socket on this machine (``real``) and simulated over the TCP model
(``model``)."""
