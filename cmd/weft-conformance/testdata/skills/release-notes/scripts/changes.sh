#!/bin/sh
# Lists the commits merged since the tag given as $1.
set -eu
git log --oneline --no-merges "${1:?usage: changes.sh TAG}..HEAD"
