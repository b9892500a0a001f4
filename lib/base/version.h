/* The one version of idemgate, idemctl and idemtop. */
#ifndef IDEM_VERSION_H
#define IDEM_VERSION_H

#define IDEM_VERSION	"0.2.0"

#endif
