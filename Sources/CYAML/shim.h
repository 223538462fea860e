// libyaml (apt: libyaml-dev; at run time libyaml-0-2), for LatchkeyConfig only.
#include <yaml.h>
