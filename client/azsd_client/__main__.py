"""`python -m azsd_client`: the `azs` command."""

from azsd_client.cli import main

main()
