"""`python -m pykubeadm.kubelet.native`: build the native helpers into the package (scripts/setup.sh)."""

from pykubeadm.kubelet.native import main

raise SystemExit(main())
