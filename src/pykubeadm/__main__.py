"""`python -m pykubeadm` runs the pykubeadm command."""

from pykubeadm.cli.main import main

main()
