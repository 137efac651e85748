// Package domain holds userd's entities, value types, policies and domain
// errors. It imports the standard library only: no HTTP, storage or token
// library may leak in here.
package domain
