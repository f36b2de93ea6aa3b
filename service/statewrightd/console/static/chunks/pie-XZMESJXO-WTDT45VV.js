import{a as e,b as r}from"./chunk-HSEYDTLC.js";import"./chunk-TZKC56AF.js";import"./chunk-PHKIAKHS.js";export{e as PieModule,r as createPieServices};
