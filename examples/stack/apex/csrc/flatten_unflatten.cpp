// apex_C: the --cpp_ext extension, a real CPython extension module built by setuptools.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject* backend(PyObject*, PyObject*) {
  return PyUnicode_FromString("rocm");
}

static PyMethodDef methods[] = {
    {"backend", backend, METH_NOARGS, "The GPU backend apex was built for."},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "apex_C", nullptr, -1, methods};

PyMODINIT_FUNC PyInit_apex_C(void) {
  return PyModule_Create(&module);
}
