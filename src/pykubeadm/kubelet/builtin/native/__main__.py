"""`python -m pykubeadm.kubelet.builtin.native`: build the native helpers into the package (scripts/setup.sh)."""

from pykubeadm.kubelet.builtin.native import main

raise SystemExit(main())
