/* Placeholder until its owner fills it in (py_simpler.h). */
#include "py_simpler.h"

int spy_config_init(PyObject *module)
{
    (void)module;
    return 0;
}
