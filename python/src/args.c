/* Placeholder until its owner fills it in (py_simpler.h). */
#include "py_simpler.h"
