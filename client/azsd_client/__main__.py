"""`python -m azsd_client`: the `azs` command."""

from azsd_client.statusfile import main

main()
