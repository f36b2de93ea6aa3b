import{a as e,b as o}from"./chunk-2DX5MCDB.js";import"./chunk-TZKC56AF.js";import"./chunk-PHKIAKHS.js";export{e as EventModelingModule,o as createEventModelingServices};
