"""`paragrad train ARGS` on one rank, exiting with the command's status (the tests start it
under the MPI launcher as `paragrad launch -n N -- paragrad train ...` would)."""
import sys

from paragrad.cli import main

sys.exit(main(sys.argv[1:]))
