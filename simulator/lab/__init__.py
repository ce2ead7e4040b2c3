"""The lab: real Chromium and real HTTP/2 and HTTP/3 servers over an emulated network.

Every study answers "what if" on models; the lab is where those answers meet a real browser
on a real (emulated) network.  It makes a client and a server network namespace, joins
them by an emulated link (``link``: a TUN device in each and the C relay between them, in
Mahimahi's design, with the models' RTT, bandwidth, queue and loss), and runs real programs
on each side:

- ``workbench lab shell [--rtt --bw --loss --queue ...] [--server CMD] -- CMD``: any server
  and any client over the link (as Mahimahi's shells);
- ``site``/``serve``/``load``: a HAR's page rebuilt as a real site on the server side and
  loaded by Chromium on the client side.

It runs as root in namespaces it makes itself, uses only RFC 5737 documentation addresses
inside them, and removes every namespace, device and process it made (``netns``).
"""
